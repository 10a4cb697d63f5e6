import { ApiPropertyOptional } from '@nestjs/swagger';

/** `DatabaseUptimeSummary` of the published API: the whole window. */
export class DatabaseUptimeSummary {
  /** uptimeSeconds / observedSeconds × 100; absent when nothing was observed. */
  @ApiPropertyOptional({ type: 'number', format: 'double', example: 99.5 })
  uptimePercentage?: number;
  /** Seconds the ready probe found the database up. */
  @ApiPropertyOptional({ type: 'integer', format: 'int64' })
  uptimeSeconds?: number;
  /** Seconds the samples stand for. */
  @ApiPropertyOptional({ type: 'integer', format: 'int64' })
  observedSeconds?: number;
}

/** `DatabaseUptimePoint` of the published API: one bucket with samples. */
export class DatabaseUptimePoint {
  /** Start of the bucket. */
  @ApiPropertyOptional({ type: 'string', format: 'date-time' })
  timestamp?: string;
  @ApiPropertyOptional({ type: 'number', format: 'double', example: 100 })
  uptimePercentage?: number;
  @ApiPropertyOptional({ type: 'integer', format: 'int64' })
  uptimeSeconds?: number;
  @ApiPropertyOptional({ type: 'integer', format: 'int64' })
  observedSeconds?: number;
}

/** `DatabaseUptimeResponse` of the published API. */
export class DatabaseUptimeResponse {
  /** Where the figures come from: `postgres-ready-probe`. */
  @ApiPropertyOptional({ example: 'postgres-ready-probe' })
  source?: string;
  /** `database`: the probe connects to the database itself. */
  @ApiPropertyOptional({ example: 'database' })
  scope?: string;
  @ApiPropertyOptional({ example: '1h' })
  granularity?: string;
  /** How the percentage is computed (time-weighted). */
  @ApiPropertyOptional({ example: 'time-weighted: uptimeSeconds / observedSeconds' })
  calculation?: string;
  @ApiPropertyOptional({ type: () => DatabaseUptimeSummary })
  summary?: DatabaseUptimeSummary;
  @ApiPropertyOptional({ type: () => [DatabaseUptimePoint] })
  points?: DatabaseUptimePoint[];
}

/** `DatabaseErrorPoint` of the published API: one counter's increase within one bucket. */
export class DatabaseErrorPoint {
  /** Start of the bucket. */
  @ApiPropertyOptional({ type: 'string', format: 'date-time' })
  timestamp?: string;
  /** The counter, e.g. `pg_stat_database.xact_rollback`. */
  @ApiPropertyOptional({ example: 'pg_stat_database.xact_rollback' })
  source?: string;
  @ApiPropertyOptional({ type: 'integer', format: 'int64' })
  errorCount?: number;
}

/** `DatabaseErrorsResponse` of the published API. */
export class DatabaseErrorsResponse {
  @ApiPropertyOptional({ example: '1h' })
  granularity?: string;
  @ApiPropertyOptional({ type: () => [DatabaseErrorPoint] })
  points?: DatabaseErrorPoint[];
}

/**
 * `DatabaseQueryPerformancePoint` of the published API. `proxyQueriesPerSecond` and
 * `thothP99LatencyMs` have no source here (no proxy; pg_stat_statements keeps no percentiles) and
 * are never present.
 */
export class DatabaseQueryPerformancePoint {
  /** Start of the bucket. */
  @ApiPropertyOptional({ type: 'string', format: 'date-time' })
  timestamp?: string;
  /** Statements completed per second (pg_stat_statements calls over the seconds they span). */
  @ApiPropertyOptional({ type: 'number', format: 'double' })
  thothQueriesPerSecond?: number;
  /** Milliseconds spent executing statements (pg_stat_statements total_exec_time). */
  @ApiPropertyOptional({ type: 'number', format: 'double' })
  thothCpuMilliseconds?: number;
}

/** `DatabaseQueryPerformanceResponse` of the published API. */
export class DatabaseQueryPerformanceResponse {
  @ApiPropertyOptional({ example: 'pg_stat_statements' })
  source?: string;
  @ApiPropertyOptional({ example: '1h' })
  granularity?: string;
  @ApiPropertyOptional({ type: () => [DatabaseQueryPerformancePoint] })
  points?: DatabaseQueryPerformancePoint[];
}
