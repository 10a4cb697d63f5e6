import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { WorkspaceScoped } from '../workspaces/workspace-access.guard';
import { ComputeInstanceTypeResponse } from './compute-instance.response';
import { ComputeService } from './compute.service';
import { RequiredScope } from '../auth/required-scope';

@ApiTags('workspaces')
@Controller('workspaces/:workspaceSlug/compute-types')
@RequiredScope('databases')
@WorkspaceScoped()
export class ComputeTypesController {
  constructor(private readonly compute: ComputeService) {}

  @Get()
  @ApiOperation({
    operationId: 'listComputeTypes',
    summary: 'List the dedicated compute types available to the workspace',
    description:
      "`memory` is a display string; `hourlyCost` is in US dollars per hour. `instanceSize` in compute requests accepts a type's `id` or its `computeSize`.",
  })
  @ApiResponse({ status: 200, type: [ComputeInstanceTypeResponse] })
  list(): Promise<ComputeInstanceTypeResponse[]> {
    return this.compute.listTypes();
  }
}
