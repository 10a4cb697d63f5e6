import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { ApiConsumes, ApiOkResponse, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedDeveloper } from '../auth/authenticated-developer';
import { CurrentDeveloper } from '../auth/current-developer.decorator';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { CurrentWorkspace, WorkspaceScoped } from '../workspaces/workspace-access.guard';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { ChangeSubscriptionRequest } from './dto/change-subscription.dto';
import { CloseSubscriptionQueryDto } from './dto/close-subscription-query.dto';
import { WorkspaceSubscriptionRequest } from './dto/start-subscription.dto';
import { ALL_SUBSCRIPTION_LEVELS } from './subscription-level';
import { WorkspaceSubscriptionDto } from './subscription.response';
import { SubscriptionsService } from './subscriptions.service';
import { RequiredScope } from '../auth/required-scope';

const LEVELS = ALL_SUBSCRIPTION_LEVELS.join(', ');

@ApiTags('subscription')
@Controller('workspaces/:workspaceSlug/subscription')
@RequiredScope('workspaces')
@WorkspaceScoped()
export class SubscriptionsController {
  constructor(private readonly subscriptions: SubscriptionsService) {}

  @Get()
  @ApiOperation({
    operationId: 'getWorkspaceCurrentSubscription',
    summary: 'Get the current subscription',
    description:
      'The subscription row in effect now. A workspace holds FREE from its creation until its level is changed; 404 entity_not_found "No active subscription" once its subscription was closed and none started since.',
  })
  @ApiOkResponse({ type: WorkspaceSubscriptionDto })
  @ApiErrors(404)
  async current(@CurrentWorkspace() workspace: WorkspaceEntity): Promise<WorkspaceSubscriptionDto> {
    return WorkspaceSubscriptionDto.from(await this.subscriptions.current(workspace), workspace);
  }

  @Get('history')
  @ApiOperation({
    operationId: 'getWorkspaceSubscriptionHistory',
    summary: 'List subscription history (most recent first)',
    description: 'Every subscription row of the workspace, including a scheduled (not yet started) one, latest first.',
  })
  @ApiOkResponse({ type: [WorkspaceSubscriptionDto] })
  async history(@CurrentWorkspace() workspace: WorkspaceEntity): Promise<WorkspaceSubscriptionDto[]> {
    return (await this.subscriptions.history(workspace)).map((row) => WorkspaceSubscriptionDto.from(row, workspace));
  }

  @Post()
  @HttpCode(201)
  @ApiConsumes('application/json', '*/*')
  @ApiOperation({
    operationId: 'start',
    summary: 'Start a subscription row',
    description: `Starts a subscription at \`level\` (${LEVELS}) now. On a workspace still holding only the FREE it was given at its creation (no subscription started, changed or closed since), PRO starts now and that FREE row ends now, as a change effective now would; FREE keeps that row and answers it. Otherwise 409 duplicate_entity while a subscription is current: change the level with PUT instead. A workspace's history gains at most SUBSCRIPTION_CHANGES_PER_DAY rows (20 by default) in any 24 hours: beyond, 429 threshold_exceeded with Retry-After.`,
  })
  @ApiResponse({ status: 201, type: WorkspaceSubscriptionDto })
  @ApiErrors(400, 409, 429)
  async start(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @CurrentDeveloper() caller: AuthenticatedDeveloper,
    @Body() body: WorkspaceSubscriptionRequest,
  ): Promise<WorkspaceSubscriptionDto> {
    return WorkspaceSubscriptionDto.from(await this.subscriptions.start(workspace, body.level, caller.id), workspace);
  }

  @Put()
  @ApiConsumes('application/json', '*/*')
  @ApiOperation({
    operationId: 'change',
    summary: 'Change level (effective now or at timestamp)',
    description: `Changes the level (${LEVELS}) now, or at \`validFrom\` (not in the past): the current row ends then and a row at the new level starts then. A change made before a scheduled one takes effect replaces it; changing to the current level cancels it. Answers the row holding the new level (for a scheduled change, the pending row). 404 when no subscription is current. A change that adds a row beyond SUBSCRIPTION_CHANGES_PER_DAY (20 by default) started in the last 24 hours is 429 threshold_exceeded with Retry-After; changing to the current level adds none and is never refused.`,
  })
  @ApiOkResponse({ type: WorkspaceSubscriptionDto })
  @ApiErrors(400, 404, 429)
  async change(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @CurrentDeveloper() caller: AuthenticatedDeveloper,
    @Body() body: ChangeSubscriptionRequest,
  ): Promise<WorkspaceSubscriptionDto> {
    const at = body.validFrom ? new Date(body.validFrom) : undefined;
    return WorkspaceSubscriptionDto.from(
      await this.subscriptions.change(workspace, body.level, caller.id, at),
      workspace,
    );
  }

  @Delete(':subscriptionId')
  @ApiOperation({
    operationId: 'close',
    summary: 'Close a subscription row at given time (now if omitted)',
    description:
      'Ends the current subscription row at `validTo` (query; not in the past) or now, dropping any scheduled change. Answers the closed row. 400 for a row that already ended or has not started; 404 for an unknown id.',
  })
  @ApiParam({ name: 'subscriptionId', format: 'uuid', type: String })
  @ApiOkResponse({ type: WorkspaceSubscriptionDto })
  @ApiErrors(400, 404)
  async close(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('subscriptionId') subscriptionId: string,
    @Query() query: CloseSubscriptionQueryDto,
  ): Promise<WorkspaceSubscriptionDto> {
    const at = query.validTo ? new Date(query.validTo) : undefined;
    return WorkspaceSubscriptionDto.from(await this.subscriptions.close(workspace, subscriptionId, at), workspace);
  }
}
