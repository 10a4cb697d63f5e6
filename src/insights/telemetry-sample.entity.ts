import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * One database seen by one sampler pass: the ready probe's outcome over the seconds the sample
 * stands for, its size, and the cumulative counters read (kept so the next pass can take deltas)
 * with the deltas since the previous sample. A delta is null when there is no earlier reading to
 * compare with, or the counter went backwards (statistics reset, statements evicted).
 */
@Entity('database_telemetry_samples')
@Index(['sampledAt'])
@Index(['workspaceId', 'sampledAt'])
export class TelemetrySampleEntity {
  @PrimaryColumn({ name: 'database_id', type: 'uuid' })
  databaseId!: string;

  @PrimaryColumn({ name: 'sampled_at', type: 'timestamptz' })
  sampledAt!: Date;

  @Column({ name: 'workspace_id', type: 'uuid' })
  workspaceId!: string;

  /** The id of the data-plane server sampled. */
  @Column({ name: 'server_key', type: 'varchar', length: 300 })
  serverKey!: string;

  /** Seconds this sample stands for: since the previous one, at most one interval. */
  @Column({ name: 'observed_seconds', type: 'int' })
  observedSeconds!: number;

  /** observedSeconds when the ready probe succeeded, else 0. */
  @Column({ name: 'up_seconds', type: 'int' })
  upSeconds!: number;

  @Column({ name: 'size_bytes', type: 'bigint', nullable: true })
  sizeBytes!: string | null;

  /** Seconds since the statement counters the deltas start from were read (the span of the statement deltas). */
  @Column({ name: 'delta_seconds', type: 'double precision', nullable: true })
  deltaSeconds!: number | null;

  /** Cumulative pg_stat_database counters, by name (xact_rollback, deadlocks, …). */
  @Column({ type: 'jsonb', nullable: true })
  counters!: Record<string, string> | null;

  /** Increase of each counter since the previous sample. */
  @Column({ name: 'error_deltas', type: 'jsonb', nullable: true })
  errorDeltas!: Record<string, number> | null;

  /** Whether pg_stat_statements was readable on the server at this pass. */
  @Column({ name: 'statements_available', type: 'boolean' })
  statementsAvailable!: boolean;

  @Column({ name: 'statement_calls', type: 'bigint', nullable: true })
  statementCalls!: string | null;

  @Column({ name: 'statement_exec_ms', type: 'double precision', nullable: true })
  statementExecMs!: number | null;

  @Column({ name: 'statement_calls_delta', type: 'bigint', nullable: true })
  statementCallsDelta!: string | null;

  @Column({ name: 'statement_exec_ms_delta', type: 'double precision', nullable: true })
  statementExecMsDelta!: number | null;
}
