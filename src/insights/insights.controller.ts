import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { ApiErrorResponse, ApiErrors } from '../common/http/api-errors.decorator';
import { CurrentWorkspace, WorkspaceScoped } from '../workspaces/workspace-access.guard';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { InsightsQueryDto } from './dto/insights-query.dto';
import { DatabaseErrorsResponse, DatabaseQueryPerformanceResponse, DatabaseUptimeResponse } from './insights.response';
import { InsightsService, MAX_INSIGHT_POINTS } from './insights.service';
import { RequiredScope } from '../auth/required-scope';

const WINDOW = `Buckets of \`granularity\` (1m, 5m, 1h or 1d; default 1h) from \`start\` (inclusive) to \`end\` (exclusive); both minute-aligned ISO 8601 date-times with a time zone; \`end\` defaults to the next minute, \`start\` to 24 hours before \`end\`; at most ${MAX_INSIGHT_POINTS} buckets. Each sample of the once-per-interval sampler counts in the bucket holding its time; buckets without samples are left out. \`databaseId\` is the database's id (its name is accepted too).`;

@ApiTags('databases')
@Controller('workspaces/:workspaceSlug/databases/:databaseId/insights')
@RequiredScope('databases')
@WorkspaceScoped()
@ApiParam({ name: 'databaseId', type: String, description: 'The database id (or its name)' })
export class InsightsController {
  constructor(private readonly insights: InsightsService) {}

  @Get('uptime')
  @ApiOperation({
    operationId: 'listDatabaseUptimeInsights',
    summary: 'List database uptime metrics',
    description: `Time-weighted uptime from PostgreSQL ready probes (connect to the database and run SELECT 1 within TELEMETRY_PROBE_TIMEOUT_MS): \`uptimePercentage\` = uptimeSeconds / observedSeconds × 100, per bucket and in \`summary\`. ${WINDOW}`,
  })
  @ApiResponse({ status: 200, type: DatabaseUptimeResponse, description: 'Database uptime metrics.' })
  @ApiErrors(400, 404)
  uptime(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseId') databaseId: string,
    @Query() query: InsightsQueryDto,
  ): Promise<DatabaseUptimeResponse> {
    return this.insights.uptime(workspace, databaseId, query);
  }

  @Get('errors')
  @ApiOperation({
    operationId: 'listDatabaseErrorInsights',
    summary: 'List database error metrics',
    description: `Increases of the error counters of pg_stat_database per bucket, one point per counter (\`source\`): pg_stat_database.xact_rollback, .deadlocks, .conflicts, and on PostgreSQL 14+ .sessions_abandoned, .sessions_fatal, .sessions_killed. ${WINDOW}`,
  })
  @ApiResponse({ status: 200, type: DatabaseErrorsResponse, description: 'Database error metrics.' })
  @ApiErrors(400, 404)
  errors(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseId') databaseId: string,
    @Query() query: InsightsQueryDto,
  ): Promise<DatabaseErrorsResponse> {
    return this.insights.errors(workspace, databaseId, query);
  }

  @Get('query-performance')
  @ApiOperation({
    operationId: 'listDatabaseQueryPerformanceInsights',
    summary: 'List database query performance metrics',
    description: `From pg_stat_statements (customers' statements; the control plane's own are left out): \`thothQueriesPerSecond\` = calls in the bucket / seconds they span, \`thothCpuMilliseconds\` = execution time (total_exec_time) in the bucket. \`proxyQueriesPerSecond\` (no proxy here) and \`thothP99LatencyMs\` (pg_stat_statements keeps no percentiles) have no source and are never present. 502 when pg_stat_statements is not loaded on the database's server. ${WINDOW}`,
  })
  @ApiResponse({
    status: 200,
    type: DatabaseQueryPerformanceResponse,
    description: 'Database query performance metrics.',
  })
  @ApiErrors(400, 404)
  @ApiResponse({
    status: 502,
    type: ApiErrorResponse,
    description: "pg_stat_statements is not loaded on the database's server (or the server could not be read)",
  })
  queryPerformance(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseId') databaseId: string,
    @Query() query: InsightsQueryDto,
  ): Promise<DatabaseQueryPerformanceResponse> {
    return this.insights.queryPerformance(workspace, databaseId, query);
  }
}
