import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
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
import { RotateCredentialsDto } from './dto/rotate-credentials.dto';

@ApiTags('credentials')
@Controller('workspaces/:workspaceSlug/databases/:databaseName/credentials')
@WorkspaceScoped()
@ApiParam({ name: 'databaseName', type: String })
export class CredentialsController {
  constructor(private readonly credentials: CredentialsService) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    operationId: 'createCredential',
    summary: 'Create a database credential',
    description:
      'Creates a PostgreSQL login role for the database; `id` is its user name. The password is returned this one time only. 409 db_status_failure until the database is READY.',
  })
  @ApiResponse({ status: 200, type: CreateCredentialResponse })
  @ApiErrors(404, 409)
  @AuthenticationReads('routeDatabase')
  create(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseName') databaseName: string,
    @CurrentDeveloper() caller: AuthenticatedDeveloper,
    @PrefetchedDatabase() prefetched: DatabaseEntity | null | undefined,
  ): Promise<CreateCredentialResponse> {
    return this.credentials.create(workspace, databaseName, caller.id, prefetched);
  }

  @Get()
  @ApiOperation({
    operationId: 'listCredentials',
    summary: 'List the credentials of a database (never their passwords)',
  })
  @ApiResponse({ status: 200, type: [CredentialResponse] })
  @ApiErrors(404)
  list(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseName') databaseName: string,
  ): Promise<CredentialResponse[]> {
    return this.credentials.list(workspace, databaseName);
  }

  @Post('rotate')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'rotateCredential',
    summary: 'Rotate the credentials of a database',
    description:
      'Creates a new credential (returned with its password) and schedules every credential that existed before the call to stop working and be deleted after the delay (0 = at once). `reason` is recorded with the rotation. With a delay, 403 threshold_exceeded when more earlier credentials would then still be working than the plan allows credentials per database (a delay of 0 is never refused).',
  })
  @ApiResponse({ status: 200, type: CreateCredentialResponse })
  @ApiErrors(400, 404, 409)
  rotate(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseName') databaseName: string,
    @Body() body: RotateCredentialsDto,
    @CurrentDeveloper() caller: AuthenticatedDeveloper,
  ): Promise<CreateCredentialResponse> {
    return this.credentials.rotate(workspace, databaseName, body, caller.id);
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
