import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { ApiConsumes, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { DATABASE_NAME_PARAM } from '../databases/database-name';
import { DatabaseResponse } from '../databases/database.response';
import { CurrentWorkspace, WorkspaceScoped } from '../workspaces/workspace-access.guard';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { DedicatedComputeInstanceResponse } from './compute-instance.response';
import { Accepted, ComputeService } from './compute.service';
import { CreateComputeInstanceDto } from './dto/create-compute-instance.dto';
import { ListComputeInstancesQueryDto } from './dto/list-compute-instances-query.dto';
import { UpdateComputeInstanceDto } from './dto/update-compute-instance.dto';
import { RequiredScope } from '../auth/required-scope';

function answer<T>(res: Response, result: Accepted<T>): T {
  res.status(result.pending ? 202 : 200);
  return result.body;
}

@ApiTags('compute')
@Controller('workspaces/:workspaceSlug/databases/:databaseName/compute')
@RequiredScope('databases')
@WorkspaceScoped()
@ApiParam(DATABASE_NAME_PARAM)
export class ComputeInstancesController {
  constructor(private readonly compute: ComputeService) {}

  @Post()
  @HttpCode(202)
  @ApiConsumes('application/json', '*/*')
  @ApiOperation({
    operationId: 'createComputeInstance',
    summary: 'Create a dedicated compute instance',
    description:
      "Records the instance (PENDING) and provisions it in the background (PROVISIONING, then READY once its size's connections are part of the database's connection limit on the data plane; it waits in PENDING while the database is not READY). `instanceSize` is a compute type's `id` or `computeSize`. The body is JSON whatever the Content-Type. Beyond COMPUTE_MAX_INSTANCES_PER_DATABASE instances, 403 threshold_exceeded; beyond COMPUTE_CHANGES_PER_DATABASE_PER_DAY creates and resizes of the database's instances in 24 hours, 429 threshold_exceeded with Retry-After.",
  })
  @ApiResponse({
    status: 202,
    type: DedicatedComputeInstanceResponse,
    description: 'Instance creation pending; poll for progress.',
  })
  @ApiErrors(400, 404, 429)
  create(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseName') databaseName: string,
    @Body() body: CreateComputeInstanceDto,
  ): Promise<DedicatedComputeInstanceResponse> {
    return this.compute.create(workspace, databaseName, body);
  }

  @Get()
  @ApiOperation({
    operationId: 'listComputeForDatabase',
    summary: 'List dedicated compute instances for a database',
    description:
      'Without `start`/`end`: the instances that are not deleted. With a window (ISO 8601 date-times, either bound optional): every instance active at some moment of it, deleted ones included: not terminated before `start`, created before `end`. Oldest first.',
  })
  @ApiResponse({ status: 200, type: [DedicatedComputeInstanceResponse] })
  @ApiErrors(400, 404)
  list(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseName') databaseName: string,
    @Query() query: ListComputeInstancesQueryDto,
  ): Promise<DedicatedComputeInstanceResponse[]> {
    return this.compute.list(workspace, databaseName, query);
  }

  @Get(':instanceId')
  @ApiOperation({
    operationId: 'describeComputeInstance',
    summary: 'Describe a dedicated compute instance',
    description:
      'A single object (the published example wraps it in an array). A deleted instance is still described, with `deleted` set, until and after it is TERMINATED.',
  })
  @ApiResponse({ status: 200, type: DedicatedComputeInstanceResponse })
  @ApiErrors(404)
  get(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseName') databaseName: string,
    @Param('instanceId') instanceId: string,
  ): Promise<DedicatedComputeInstanceResponse> {
    return this.compute.get(workspace, databaseName, instanceId);
  }

  @Put(':instanceId')
  @ApiConsumes('application/json', '*/*')
  @ApiOperation({
    operationId: 'updateComputeInstance',
    summary: 'Update a dedicated compute instance',
    description:
      'Renames and/or resizes the instance (give one or both fields). A resize sets `desiredInstanceType` and is applied in the background (RESIZING, then READY): 202 until the instance runs at that size; a rename alone is complete at once: 200. Answers the database, with `parent` {id, name} naming it. A change of size counts against COMPUTE_CHANGES_PER_DATABASE_PER_DAY with the creates (429 threshold_exceeded with Retry-After beyond it); a rename never does.',
  })
  @ApiResponse({ status: 200, type: DatabaseResponse, description: 'Instance updated' })
  @ApiResponse({ status: 202, type: DatabaseResponse, description: 'Instance update pending; poll for progress.' })
  @ApiErrors(400, 404, 409, 429)
  async update(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseName') databaseName: string,
    @Param('instanceId') instanceId: string,
    @Body() body: UpdateComputeInstanceDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<DatabaseResponse> {
    return answer(res, await this.compute.update(workspace, databaseName, instanceId, body));
  }

  @Delete(':instanceId')
  @ApiOperation({
    operationId: 'deleteComputeInstance',
    summary: 'Delete a dedicated compute instance',
    description:
      "Removes the instance from the database at once (it leaves the list; status DELETING) and ends its usage period then: it is billed and measured up to this request. It is terminated in the background: its connections leave the database's connection limit (TERMINATED). 202 until then, 200 once it is TERMINATED. Answers the database.",
  })
  @ApiResponse({ status: 200, type: DatabaseResponse, description: 'Instance deleted' })
  @ApiResponse({ status: 202, type: DatabaseResponse, description: 'Instance deletion pending; poll for progress.' })
  @ApiErrors(404)
  async delete(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseName') databaseName: string,
    @Param('instanceId') instanceId: string,
    @Res({ passthrough: true }) res: Response,
  ): Promise<DatabaseResponse> {
    return answer(res, await this.compute.delete(workspace, databaseName, instanceId));
  }
}
