import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiNoContentResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedDeveloper } from '../auth/authenticated-developer';
import { CurrentDeveloper } from '../auth/current-developer.decorator';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { CurrentWorkspace, WorkspaceScoped } from '../workspaces/workspace-access.guard';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { CreateInviteDto } from './dto/create-invite.dto';
import { ListInvitesQueryDto } from './dto/list-invites.dto';
import { InviteResponse } from './invite.response';
import { InvitesService } from './invites.service';
import { RequiredScope } from '../auth/required-scope';

@ApiTags('invites')
@Controller('workspaces/:workspaceSlug/invites')
@RequiredScope('workspaces')
@WorkspaceScoped()
export class InvitesController {
  constructor(private readonly invites: InvitesService) {}

  @Post()
  @HttpCode(201)
  @ApiOperation({
    operationId: 'createDeveloperInvite',
    summary: 'Invite a developer by e-mail; a message with a join link is sent to the invitee',
    description:
      'Invite e-mails are limited per sender, per recipient address and for the whole service over the last hour (deleted invites count too): over a limit, 429 `threshold_exceeded` with `Retry-After`.',
  })
  @ApiCreatedResponse({ type: InviteResponse })
  @ApiErrors(400, 409, 415, 429)
  create(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @CurrentDeveloper() caller: AuthenticatedDeveloper,
    @Body() body: CreateInviteDto,
  ): Promise<InviteResponse> {
    return this.invites.create(workspace, caller, body);
  }

  @Get()
  @ApiOperation({ operationId: 'listDeveloperInvites', summary: 'List the invites of a workspace' })
  @ApiErrors(400)
  list(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @CurrentDeveloper() caller: AuthenticatedDeveloper,
    @Query() query: ListInvitesQueryDto,
  ): Promise<InviteResponse[]> {
    return this.invites.list(workspace, caller.id, query.verificationState);
  }

  @Delete(':inviteId')
  @HttpCode(204)
  @ApiOperation({ operationId: 'deleteDeveloperInvite', summary: 'Delete an invite; its code stops working' })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiErrors(404)
  async delete(@CurrentWorkspace() workspace: WorkspaceEntity, @Param('inviteId') inviteId: string): Promise<void> {
    await this.invites.delete(workspace, inviteId);
  }
}
