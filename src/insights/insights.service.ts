import { Injectable } from '@nestjs/common';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { DatabasesService } from '../databases/databases.service';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import type { Granularity, InsightsQueryDto } from './dto/insights-query.dto';
import { InsightsRepository, type SampleWindow } from './insights.repository';
import type {
  DatabaseErrorsResponse,
  DatabaseQueryPerformanceResponse,
  DatabaseUptimeResponse,
} from './insights.response';

const GRANULARITY_MS: Record<Granularity, number> = { '1m': 60_000, '5m': 300_000, '1h': 3_600_000, '1d': 86_400_000 };
const DEFAULT_WINDOW_MS = 86_400_000;
/** Buckets one answer may hold (a week of minutes). */
export const MAX_INSIGHT_POINTS = 10080;

interface Window {
  databaseId: string;
  start: Date;
  end: Date;
  granularity: Granularity;
}

/** Up to 3 decimals, for percentages and rates. */
const round3 = (value: number) => Math.round(value * 1000) / 1000;
const percentage = (up: number, observed: number) => round3((up / observed) * 100);

const sampleWindow = (w: Window): SampleWindow => ({
  databaseId: w.databaseId,
  start: w.start,
  end: w.end,
  bucketSeconds: GRANULARITY_MS[w.granularity] / 1000,
});

/**
 * Answers the insights of one database from the samples the sampler recorded: buckets of
 * `granularity` from `start`, each sample counted in the bucket holding its `sampled_at`; buckets
 * without samples are left out.
 */
@Injectable()
export class InsightsService {
  constructor(
    private readonly samples: InsightsRepository,
    private readonly databases: DatabasesService,
  ) {}

  async uptime(
    workspace: WorkspaceEntity,
    databaseId: string,
    query: InsightsQueryDto,
  ): Promise<DatabaseUptimeResponse> {
    const w = await this.window(workspace, databaseId, query);
    const rows = await this.samples.uptimeBuckets(sampleWindow(w));
    let up = 0;
    let observed = 0;
    const points = rows.map((r) => {
      const u = Number(r.up);
      const o = Number(r.observed);
      up += u;
      observed += o;
      return {
        timestamp: r.bucket.toISOString(),
        uptimePercentage: percentage(u, o),
        uptimeSeconds: u,
        observedSeconds: o,
      };
    });
    return {
      source: 'postgres-ready-probe',
      scope: 'database',
      granularity: w.granularity,
      calculation: 'time-weighted: uptimeSeconds / observedSeconds × 100',
      summary: {
        ...(observed > 0 ? { uptimePercentage: percentage(up, observed) } : {}),
        uptimeSeconds: up,
        observedSeconds: observed,
      },
      points,
    };
  }

  async errors(
    workspace: WorkspaceEntity,
    databaseId: string,
    query: InsightsQueryDto,
  ): Promise<DatabaseErrorsResponse> {
    const w = await this.window(workspace, databaseId, query);
    const rows = await this.samples.errorBuckets(sampleWindow(w));
    return {
      granularity: w.granularity,
      points: rows.map((r) => ({
        timestamp: r.bucket.toISOString(),
        source: `pg_stat_database.${r.source}`,
        errorCount: Number(r.count),
      })),
    };
  }

  async queryPerformance(
    workspace: WorkspaceEntity,
    databaseId: string,
    query: InsightsQueryDto,
  ): Promise<DatabaseQueryPerformanceResponse> {
    const w = await this.window(workspace, databaseId, query);
    // undefined (no sample yet) is no refusal: the answer then has no points.
    if ((await this.samples.latestStatementsAvailable(w.databaseId)) === false) {
      throw new ApiException(
        ErrorCode.ServerError,
        "Query performance is unavailable: pg_stat_statements is not loaded on the database's server " +
          '(it must be in shared_preload_libraries and created in the admin database), or the server could not be read',
        { status: 502 },
      );
    }
    const rows = await this.samples.queryPerformanceBuckets(sampleWindow(w));
    return {
      source: 'pg_stat_statements',
      granularity: w.granularity,
      points: rows.map((r) => {
        const calls = Number(r.calls);
        const execMs = Number(r.exec_ms);
        return {
          timestamp: r.bucket.toISOString(),
          thothQueriesPerSecond: round3(calls / Number(r.seconds)),
          thothCpuMilliseconds: round3(execMs),
        };
      }),
    };
  }

  /** The database (404 when not in the workspace) and the validated window. */
  private async window(workspace: WorkspaceEntity, databaseId: string, query: InsightsQueryDto): Promise<Window> {
    const granularity = query.granularity ?? '1h';
    const start = query.start ? new Date(query.start) : undefined;
    const end = query.end ? new Date(query.end) : undefined;
    for (const [name, value] of [
      ['start', start],
      ['end', end],
    ] as const) {
      if (value && value.getTime() % 60_000 !== 0) {
        throw new ApiException(
          ErrorCode.BadRequest,
          `${name} must be minute-aligned (no seconds), e.g. 2025-03-01T12:00:00Z`,
        );
      }
    }
    const to = end ?? new Date(Math.ceil(Date.now() / 60_000) * 60_000);
    const from = start ?? new Date(to.getTime() - DEFAULT_WINDOW_MS);
    if (from.getTime() >= to.getTime()) throw new ApiException(ErrorCode.BadRequest, 'start must be before end');
    const points = Math.ceil((to.getTime() - from.getTime()) / GRANULARITY_MS[granularity]);
    if (points > MAX_INSIGHT_POINTS) {
      throw new ApiException(
        ErrorCode.BadRequest,
        `The window from start to end holds ${points} buckets of granularity ${granularity}; at most ${MAX_INSIGHT_POINTS} (use a coarser granularity or a shorter window)`,
      );
    }
    const database = await this.databases.findByIdOrName(workspace, databaseId);
    return { databaseId: database.id, start: from, end: to, granularity };
  }
}
