import { Body, Controller, HttpCode, Post, Req, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { DEFAULT_IPV6_SUBNET_PREFIX, normalizeIp } from '@nestjs/throttler';
import type { Request } from 'express';
import type { AuthenticatedDeveloper } from '../auth/authenticated-developer';
import { CurrentDeveloper } from '../auth/current-developer.decorator';
import { Public } from '../auth/public.decorator';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { DatabaseResponse } from '../databases/database.response';
import { CurrentWorkspace, WorkspaceScoped } from '../workspaces/workspace-access.guard';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { ClaimDatabaseDto } from './dto/claim-database.dto';
import { ProvisionDatabaseDto } from './dto/provision-database.dto';
import { InstantDatabasesOffered } from './instant-databases-offered.guard';
import { InstantDatabasesService } from './instant-databases.service';
import { ProvisionedDatabaseResponse } from './provisioned-database.response';
import { RequiredScope } from '../auth/required-scope';

/** The instant provision's path (hidden from `Allow` when switched off: InstantDatabasesModule). */
export const PROVISION_PATH = '/databases/provision';

@ApiTags('databases')
@Controller()
export class InstantDatabasesController {
  constructor(private readonly instant: InstantDatabasesService) {}

  @Post(PROVISION_PATH.slice(1))
  @Public()
  @UseGuards(InstantDatabasesOffered)
  @HttpCode(201)
  @ApiOperation({
    operationId: 'provisionDatabaseUnauthenticated',
    security: [],
    summary: 'Provision a database without authentication',
    description:
      'Creates a database (from the warm pool when possible) that belongs to no workspace yet, with one credential, and returns its connection string and a claim code valid INSTANT_DATABASE_CLAIM_TTL_SECONDS (24 hours by default). The password and the code are shown this once. An unclaimed database is dropped when its code expires. Limited per client address and in all per hour, and in the unclaimed databases alive at once (429 with Retry-After). When the operator has turned instant databases off (INSTANT_DATABASES=off), it answers as an unknown route at this path does: 405 with Allow: GET.',
  })
  @ApiResponse({ status: 201, type: ProvisionedDatabaseResponse })
  @ApiErrors(400, 405, 415, 429, 503)
  provision(@Body() body: ProvisionDatabaseDto, @Req() req: Request): Promise<ProvisionedDatabaseResponse> {
    // An IPv6 client counts by its /64, as the login's attempt limit does: one host holds a whole
    // /64 and could otherwise take a fresh address, and a fresh allowance, for every request.
    return this.instant.provision(body.region, req.ip ? normalizeIp(req.ip, DEFAULT_IPV6_SUBNET_PREFIX) : 'unknown');
  }

  @Post('workspaces/:workspaceSlug/databases/claim')
  @WorkspaceScoped()
  @RequiredScope('databases')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'claimDatabase',
    summary: 'Claim a database provisioned without auth',
    description:
      'Moves the database of the claim code into the workspace, keeping its data and credentials. 404 when the code is unknown, used or expired; 400 when the workspace already has a database of that name or its plan has no room.',
  })
  @ApiResponse({ status: 200, type: DatabaseResponse })
  @ApiErrors(400, 404, 415)
  claim(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @CurrentDeveloper() caller: AuthenticatedDeveloper,
    @Body() body: ClaimDatabaseDto,
  ): Promise<DatabaseResponse> {
    return this.instant.claim(workspace, body.claimCode, caller.id);
  }
}
