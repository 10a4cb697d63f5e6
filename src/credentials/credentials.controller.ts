import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedDeveloper } from '../auth/authenticated-developer';
import { AuthenticationReads } from '../auth/authentication-reads';
import { CurrentDeveloper } from '../auth/current-developer.decorator';
import { ApiErrors } from '../common/http/api-errors.decorator';
import type { DatabaseEntity } from '../databases/database.entity';
import { PrefetchedDatabase } from '../databases/prefetched-database.decorator';
import { CurrentWorkspace, WorkspaceScoped } from '../workspaces/workspace-access.guard';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { CreateCredentialResponse, CredentialResponse } from './credential.response';
import { CredentialsService } from './credentials.service';
import { CredentialGroupQueryDto } from './dto/credential-group-query.dto';
import { RotateCredentialsDto } from './dto/rotate-credentials.dto';
import { RequiredScope } from '../auth/required-scope';
import { DATABASE_NAME_PARAM } from '../databases/database-name';

@ApiTags('credentials')
@Controller('workspaces/:workspaceSlug/databases/:databaseName/credentials')
@RequiredScope('databases')
@WorkspaceScoped()
@ApiParam(DATABASE_NAME_PARAM)
export class CredentialsController {
  constructor(private readonly credentials: CredentialsService) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    operationId: 'createCredential',
    summary: 'Create a database credential',
    description:
      'Creates a PostgreSQL login role for the database; `id` is its user name. The password is returned this one time only. `tenantId` and `internal` are recorded with the credential (they decide which list and which rotation it belongs to; the role acts as the database owner either way). 409 db_status_failure until the database is READY.',
  })
  @ApiResponse({ status: 200, type: CreateCredentialResponse })
  @ApiErrors(400, 404, 409)
  @AuthenticationReads('routeDatabase')
  create(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseName') databaseName: string,
    @Query() query: CredentialGroupQueryDto,
    @CurrentDeveloper() caller: AuthenticatedDeveloper,
    @PrefetchedDatabase() prefetched: DatabaseEntity | null | undefined,
  ): Promise<CreateCredentialResponse> {
    return this.credentials.create(workspace, databaseName, caller.id, query, prefetched);
  }

  @Get()
  @ApiOperation({
    operationId: 'listCredentials',
    summary: 'List the credentials of a database (never their passwords)',
    description:
      'The credentials that are not internal, of every tenant and of none; with `internal=true` the internal ones instead; with `tenantId` only that tenant’s.',
  })
  @ApiResponse({ status: 200, type: [CredentialResponse] })
  @ApiErrors(400, 404)
  list(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseName') databaseName: string,
    @Query() query: CredentialGroupQueryDto,
  ): Promise<CredentialResponse[]> {
    return this.credentials.list(workspace, databaseName, query);
  }

  @Post('rotate')
  @HttpCode(200)
  @ApiConsumes('application/json', '*/*')
  @ApiBody({ type: RotateCredentialsDto, required: false })
  @ApiOperation({
    operationId: 'rotateCredential',
    summary: 'Rotate the credentials of a database',
    description:
      'Creates a new credential (returned with its password) of the group `tenantId` and `internal` name (no tenant and not internal when omitted) and schedules every credential of that group that existed before the call to stop working and be deleted after the delay (0 = at once); other tenants’ and the internal (or the other) credentials are not touched. `reason` is recorded with the rotation. 403 threshold_exceeded when more credentials of the database than the plan allows per database would then still be working besides the new one (a delay of 0 that replaces a working credential is never refused).',
  })
  @ApiResponse({ status: 200, type: CreateCredentialResponse })
  @ApiErrors(400, 404, 409)
  rotate(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseName') databaseName: string,
    @Body() body: RotateCredentialsDto,
    @Query() query: CredentialGroupQueryDto,
    @CurrentDeveloper() caller: AuthenticatedDeveloper,
  ): Promise<CreateCredentialResponse> {
    return this.credentials.rotate(workspace, databaseName, body, query, caller.id);
  }

  @Delete(':credentialId')
  @HttpCode(204)
  @ApiOperation({
    operationId: 'deleteCredential',
    summary: 'Delete a database credential: its sessions are terminated and its role is dropped',
  })
  @ApiResponse({ status: 204, description: 'Credential deleted' })
  @ApiErrors(404)
  async delete(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseName') databaseName: string,
    @Param('credentialId') credentialId: string,
  ): Promise<void> {
    await this.credentials.delete(workspace, databaseName, credentialId);
  }
}
