import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { CurrentWorkspace, WorkspaceScoped } from '../workspaces/workspace-access.guard';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { WorkspaceComputeUsage } from './compute-usage.response';
import { ComputeMetricsQueryDto } from './dto/compute-metrics-query.dto';
import { MAX_METRICS_WINDOW_DAYS } from './metrics.service';
import { MetricsService } from './metrics.service';
import { RequiredScope } from '../auth/required-scope';

@ApiTags('metrics')
@Controller('workspaces/:workspaceSlug/metrics')
@RequiredScope('databases')
@WorkspaceScoped()
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get('compute')
  @ApiOperation({
    operationId: 'listWorkspaceComputeMetrics',
    summary: 'Dedicated compute usage of the workspace within a time window',
    description: `vCPU-hours per database and instance (periods clipped to the window; a running instance counts up to now; deleted databases included) and an hourly chart of the vCPUs in use. The window defaults to the 24 hours up to now (\`end\` defaults to now, \`start\` to 24 hours before \`end\`); \`start\` must be before \`end\` and the window at most ${MAX_METRICS_WINDOW_DAYS} days. Answers an array holding one record.`,
  })
  @ApiOkResponse({ type: [WorkspaceComputeUsage] })
  @ApiErrors(400)
  compute(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Query() query: ComputeMetricsQueryDto,
  ): Promise<WorkspaceComputeUsage[]> {
    return this.metrics.computeUsage(workspace, query.start, query.end);
  }
}
