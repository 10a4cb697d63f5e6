import { Controller, Delete, Get, HttpCode, Param } from '@nestjs/common';
import { ApiNoContentResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedDeveloper } from '../auth/authenticated-developer';
import { CurrentDeveloper } from '../auth/current-developer.decorator';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { isUuid } from '../common/http/uuid';
import { CurrentWorkspace, WorkspaceScoped } from '../workspaces/workspace-access.guard';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { WorkspacesService } from '../workspaces/workspaces.service';
import { DeveloperProfiles } from './developer-profiles.service';
import { DeveloperResponse } from './developer.response';
import { RequiredScope } from '../auth/required-scope';

@ApiTags('developers')
@Controller('workspaces/:workspaceSlug/developers')
@RequiredScope('workspaces')
@WorkspaceScoped()
export class WorkspaceDevelopersController {
  constructor(
    private readonly profiles: DeveloperProfiles,
    private readonly workspaces: WorkspacesService,
  ) {}

  @Get()
  @ApiOperation({ operationId: 'listWorkspaceDevelopers', summary: 'List the developers of a workspace' })
  list(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @CurrentDeveloper() caller: AuthenticatedDeveloper,
  ): Promise<DeveloperResponse[]> {
    return this.profiles.membersOf(workspace, caller.id);
  }

  @Delete(':developerId')
  @HttpCode(204)
  @ApiOperation({
    operationId: 'removeDeveloper',
    summary:
      'Remove a developer from the workspace; their access ends at once. The last member cannot be removed (403 forbidden_operation).',
  })
  @ApiNoContentResponse({ description: 'Removed' })
  @ApiErrors(404)
  async remove(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @CurrentDeveloper() caller: AuthenticatedDeveloper,
    @Param('developerId') developerId: string,
  ): Promise<void> {
    await this.workspaces.removeMember(
      workspace,
      isUuid(developerId) ? developerId : '00000000-0000-0000-0000-000000000000',
      caller.id,
    );
  }
}
