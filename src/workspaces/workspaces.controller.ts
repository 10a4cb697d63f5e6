import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiConsumes, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedDeveloper } from '../auth/authenticated-developer';
import { CurrentDeveloper } from '../auth/current-developer.decorator';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { ALL_REGIONS } from '../config/regions';
import { CreateWorkspaceDto } from './dto/create-workspace.dto';
import { CurrentWorkspace, WorkspaceScoped } from './workspace-access.guard';
import type { WorkspaceEntity } from './workspace.entity';
import { WorkspaceResponse } from './workspace.response';
import { WorkspacesService } from './workspaces.service';
import { RequiredScope } from '../auth/required-scope';

@ApiTags('workspaces')
@Controller('workspaces')
@RequiredScope('workspaces')
export class WorkspacesController {
  constructor(private readonly workspaces: WorkspacesService) {}

  @Post()
  @HttpCode(201)
  @ApiConsumes('application/json', '*/*')
  @ApiOperation({ operationId: 'createWorkspace', summary: 'Create a workspace; the caller becomes its first member' })
  @ApiErrors(400, 401, 403, 409)
  async create(
    @CurrentDeveloper() caller: AuthenticatedDeveloper,
    @Body() body: CreateWorkspaceDto,
  ): Promise<WorkspaceResponse> {
    return WorkspaceResponse.from(await this.workspaces.create(caller, body.name));
  }

  @Get()
  @ApiOperation({ operationId: 'listWorkspaces', summary: 'List the workspaces the caller belongs to' })
  @ApiErrors(401, 403)
  async list(@CurrentDeveloper() caller: AuthenticatedDeveloper): Promise<WorkspaceResponse[]> {
    return (await this.workspaces.listForMember(caller.id)).map((w) => WorkspaceResponse.from(w));
  }

  @Get(':workspaceSlug')
  @WorkspaceScoped()
  @ApiOperation({
    operationId: 'getWorkspace',
    summary: 'Get a workspace (a single object, as the live service answers)',
  })
  get(@CurrentWorkspace() workspace: WorkspaceEntity): WorkspaceResponse {
    return WorkspaceResponse.from(workspace);
  }

  @Get(':workspaceSlug/regions')
  @WorkspaceScoped()
  // What a database is created in: a token for databases needs it, one for workspaces does not.
  @RequiredScope('databases')
  @ApiOperation({ operationId: 'listRegions', summary: 'List the regions available to the workspace' })
  @ApiOkResponse({ type: [String], example: ALL_REGIONS })
  regions(): string[] {
    return ALL_REGIONS;
  }
}
