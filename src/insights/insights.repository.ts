import { Injectable } from '@nestjs/common';
import { MetadataTransactions } from '../database/metadata-transactions';
import { lockForContextTransaction } from '../database/transaction-lock';

/** One database's window of samples, cut into buckets of `bucketSeconds` from `start`. */
export interface SampleWindow {
  databaseId: string;
  start: Date;
  end: Date;
  bucketSeconds: number;
}

/** The latest earlier sample of a database: the baseline of the next sample's deltas. */
export interface PreviousSample {
  database_id: string;
  sampled_at: Date;
  counters: Record<string, string> | null;
  statement_calls: string | null;
  statement_exec_ms: number | null;
  /** When `statement_calls` was read: the start of the span of the next statement deltas. */
  statements_sampled_at: Date | null;
}

/** A sample to record (its moment is the pass's, given apart). */
export interface NewSample {
  database_id: string;
  workspace_id: string;
  server_key: string;
  observed_seconds: number;
  up_seconds: number;
  size_bytes: string | null;
  delta_seconds: number | null;
  counters: Record<string, string> | null;
  error_deltas: Record<string, number> | null;
  statements_available: boolean;
  statement_calls: string | null;
  statement_exec_ms: number | null;
  statement_calls_delta: string | null;
  statement_exec_ms_delta: number | null;
}

/** Samples pruned per statement (bounded deletes, repeated until done). */
const PRUNE_BATCH = 10000;

/**
 * Every statement on `database_telemetry_samples` and `database_storage_usage` (habit 15): one
 * repository for both, since a sample and the storage it adds to its month are written by one
 * statement. Raw SQL (date_bin buckets, jsonb recordsets, writable CTEs). Statements go through the
 * transaction the context carries (MetadataTransactions): inside its withTransaction they join it,
 * outside they run on their own.
 */
@Injectable()
export class InsightsRepository {
  constructor(private readonly txHost: MetadataTransactions) {}

  /**
   * Takes the turn of the server's sample writes for the rest of the context's transaction: passes
   * over one server (a late one and the next slot's) read their baselines and write their samples
   * one after the other, so neither takes a baseline the other is replacing.
   */
  lockServerSamples(serverKey: string): Promise<void> {
    return lockForContextTransaction(this.txHost, `telemetry-samples:${serverKey}`);
  }

  /** Which of the databases already have a sample later than `at` (a later pass wrote first). */
  async sampledAfter(ids: string[], at: Date): Promise<Set<string>> {
    const rows = await this.txHost.tx.query<{ database_id: string }[]>(
      `SELECT d.id AS database_id FROM unnest($1::uuid[]) AS d(id)
        WHERE EXISTS (SELECT 1 FROM database_telemetry_samples WHERE database_id = d.id AND sampled_at > $2)`,
      [ids, at],
    );
    return new Set(rows.map((r) => r.database_id));
  }

  /**
   * The latest sample before `at` (within a day) of each database: the baseline of the next
   * sample's deltas. One backward step of the primary key (database_id, sampled_at) per database:
   * reading the day's samples and keeping the latest would touch a day of rows per database (1,440
   * at a 60 s interval). A sample whose statistics read failed recorded no counters (or no statement
   * counters): for a pass that has them (`read`), those of the latest earlier sample that recorded
   * them are taken instead, so the errors and calls of the failed stretch are counted, not lost
   * (with `statements_sampled_at`, the moment the calls were read, the rate's span). That second
   * step runs only where the latest sample lacks them.
   */
  async previousSamples(
    ids: string[],
    at: Date,
    read: { counters: boolean; statements: boolean } = { counters: true, statements: true },
  ): Promise<Map<string, PreviousSample>> {
    const rows = await this.txHost.tx.query<PreviousSample[]>(
      `SELECT s.database_id, s.sampled_at, COALESCE(s.counters, c.counters) AS counters,
              COALESCE(s.statement_calls, st.statement_calls)::text AS statement_calls,
              CASE WHEN s.statement_calls IS NULL THEN st.statement_exec_ms ELSE s.statement_exec_ms END
                AS statement_exec_ms,
              CASE WHEN s.statement_calls IS NULL THEN st.sampled_at ELSE s.sampled_at END AS statements_sampled_at
         FROM unnest($1::uuid[]) AS d(id)
        CROSS JOIN LATERAL (
               SELECT database_id, sampled_at, counters, statement_calls, statement_exec_ms
                 FROM database_telemetry_samples
                WHERE database_id = d.id AND sampled_at < $2 AND sampled_at >= $2::timestamptz - interval '1 day'
                ORDER BY sampled_at DESC
                LIMIT 1) s
         LEFT JOIN LATERAL (
               SELECT counters
                 FROM database_telemetry_samples
                WHERE $3 AND s.counters IS NULL
                  AND database_id = d.id AND sampled_at < $2 AND sampled_at >= $2::timestamptz - interval '1 day'
                  AND counters IS NOT NULL
                ORDER BY sampled_at DESC
                LIMIT 1) c ON true
         LEFT JOIN LATERAL (
               SELECT statement_calls, statement_exec_ms, sampled_at
                 FROM database_telemetry_samples
                WHERE $4 AND s.statement_calls IS NULL
                  AND database_id = d.id AND sampled_at < $2 AND sampled_at >= $2::timestamptz - interval '1 day'
                  AND statement_calls IS NOT NULL
                ORDER BY sampled_at DESC
                LIMIT 1) st ON true`,
      [ids, at, read.counters, read.statements],
    );
    return new Map(rows.map((r) => [r.database_id, r]));
  }

  /**
   * Inserts the samples and adds their storage to each database's month for the sample's workspace
   * (the one holding the database when the pass began: after a claim, the claiming one), in one
   * statement. A sample stands for the interval that ends at its moment, so its seconds belong to the
   * month(s) of that interval (the pass at 00:00Z on the 1st adds to the month that just ended; an
   * interval across a month's start is split there), and a deleted database's end when its deletion
   * was due. A sample already recorded (same database and moment) is skipped and adds nothing.
   * Answers how many samples were inserted.
   */
  async insertSamplesWithStorage(rows: NewSample[], at: Date): Promise<number> {
    if (!rows.length) return 0;
    const result = await this.txHost.tx.query<{ database_id: string }[]>(
      `WITH input AS (
         SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(
           database_id uuid, workspace_id uuid, server_key text, observed_seconds int, up_seconds int,
           size_bytes bigint, delta_seconds float8, counters jsonb, error_deltas jsonb,
           statements_available boolean, statement_calls bigint, statement_exec_ms float8,
           statement_calls_delta bigint, statement_exec_ms_delta float8)
       ), inserted AS (
         INSERT INTO database_telemetry_samples (
           database_id, sampled_at, workspace_id, server_key, observed_seconds, up_seconds, size_bytes,
           delta_seconds, counters, error_deltas, statements_available, statement_calls, statement_exec_ms,
           statement_calls_delta, statement_exec_ms_delta)
         SELECT database_id, $2, workspace_id, server_key, observed_seconds, up_seconds, size_bytes,
                delta_seconds, counters, error_deltas, statements_available, statement_calls, statement_exec_ms,
                statement_calls_delta, statement_exec_ms_delta
           FROM input
         ON CONFLICT (database_id, sampled_at) DO NOTHING
         RETURNING database_id, workspace_id, size_bytes, observed_seconds
       ), spans AS (
         -- What each sample meters: the size over the seconds it observed, up to when a deleted
         -- database's deletion was due (as its compute), however late its finalization.
         SELECT i.database_id, i.workspace_id, i.size_bytes,
                $2::timestamptz - make_interval(secs => i.observed_seconds) AS start,
                least($2::timestamptz, coalesce(d.deletion_due_at, 'infinity')) AS stop
           FROM inserted i JOIN databases d ON d.id = i.database_id
          WHERE i.size_bytes IS NOT NULL
       ), parts AS (
         -- A span across the start of a month (UTC) is split there (a span is at most an interval,
         -- an hour, so it crosses one at most): each month meters its own seconds.
         SELECT s.database_id, s.workspace_id, s.size_bytes, p.lo, extract(epoch FROM p.hi - p.lo) AS seconds
           FROM spans s
           CROSS JOIN LATERAL (SELECT greatest(s.start, date_trunc('month', s.stop - interval '1 microsecond', 'UTC')) AS cut) m
           CROSS JOIN LATERAL (VALUES (s.start, m.cut), (m.cut, s.stop)) AS p(lo, hi)
          WHERE p.hi > p.lo
       ), stored AS (
         INSERT INTO database_storage_usage (database_id, ym, workspace_id, byte_seconds, observed_seconds)
         SELECT database_id, to_char(lo AT TIME ZONE 'UTC', 'YYYY-MM'), workspace_id,
                round(size_bytes::numeric * seconds), round(seconds)
           FROM parts
         ON CONFLICT (database_id, ym, workspace_id) DO UPDATE
            SET byte_seconds = database_storage_usage.byte_seconds + EXCLUDED.byte_seconds,
                observed_seconds = database_storage_usage.observed_seconds + EXCLUDED.observed_seconds
       )
       SELECT database_id FROM inserted`,
      [JSON.stringify(rows), at],
    );
    return result.length;
  }

  /** Deletes the samples taken before `before`, in bounded batches. Answers how many. */
  async pruneSamplesBefore(before: Date): Promise<number> {
    let total = 0;
    for (;;) {
      const [, count] = await this.txHost.tx.query<[unknown, number]>(
        `DELETE FROM database_telemetry_samples
          WHERE ctid IN (SELECT ctid FROM database_telemetry_samples WHERE sampled_at < $1 LIMIT ${PRUNE_BATCH})`,
        [before],
      );
      total += count;
      if (count < PRUNE_BATCH) return total;
    }
  }

  /** Up and observed seconds per bucket (buckets without samples left out). */
  uptimeBuckets(w: SampleWindow): Promise<{ bucket: Date; up: string; observed: string }[]> {
    return this.txHost.tx.query<{ bucket: Date; up: string; observed: string }[]>(
      `SELECT date_bin($4::interval, sampled_at, $2) AS bucket, sum(up_seconds)::text AS up,
              sum(observed_seconds)::text AS observed
         FROM database_telemetry_samples
        WHERE database_id = $1 AND sampled_at >= $2 AND sampled_at < $3
        GROUP BY 1 ORDER BY 1`,
      [w.databaseId, w.start, w.end, interval(w)],
    );
  }

  /** Errors per bucket and counter (the keys of the samples' `error_deltas`). */
  errorBuckets(w: SampleWindow): Promise<{ bucket: Date; source: string; count: string }[]> {
    return this.txHost.tx.query<{ bucket: Date; source: string; count: string }[]>(
      `SELECT date_bin($4::interval, s.sampled_at, $2) AS bucket, e.key AS source, sum(e.value::bigint)::text AS count
         FROM database_telemetry_samples s CROSS JOIN LATERAL jsonb_each_text(s.error_deltas) e
        WHERE s.database_id = $1 AND s.sampled_at >= $2 AND s.sampled_at < $3
        GROUP BY 1, 2 ORDER BY 1, 2`,
      [w.databaseId, w.start, w.end, interval(w)],
    );
  }

  /** Whether the database's latest sample could read pg_stat_statements; undefined when it has none. */
  async latestStatementsAvailable(databaseId: string): Promise<boolean | undefined> {
    const [latest] = await this.txHost.tx.query<{ statements_available: boolean }[]>(
      `SELECT statements_available FROM database_telemetry_samples
        WHERE database_id = $1 ORDER BY sampled_at DESC LIMIT 1`,
      [databaseId],
    );
    return latest?.statements_available;
  }

  /** Statement calls, execution milliseconds and seconds per bucket, from samples with statement deltas. */
  queryPerformanceBuckets(
    w: SampleWindow,
  ): Promise<{ bucket: Date; calls: string; exec_ms: number; seconds: number }[]> {
    return this.txHost.tx.query<{ bucket: Date; calls: string; exec_ms: number; seconds: number }[]>(
      `SELECT date_bin($4::interval, sampled_at, $2) AS bucket, sum(statement_calls_delta)::text AS calls,
              sum(statement_exec_ms_delta)::float8 AS exec_ms, sum(delta_seconds)::float8 AS seconds
         FROM database_telemetry_samples
        WHERE database_id = $1 AND sampled_at >= $2 AND sampled_at < $3
          AND statement_calls_delta IS NOT NULL AND delta_seconds > 0
        GROUP BY 1 ORDER BY 1`,
      [w.databaseId, w.start, w.end, interval(w)],
    );
  }

  /**
   * Each database's byte-seconds in the workspace's month, while the workspace held it (databases
   * deleted or moved out since included).
   */
  storageOfMonth(workspaceId: string, ym: string): Promise<{ database_id: string; byte_seconds: string }[]> {
    return this.txHost.tx.query<{ database_id: string; byte_seconds: string }[]>(
      `SELECT database_id, byte_seconds::text FROM database_storage_usage
        WHERE workspace_id = $1 AND ym = $2 ORDER BY database_id`,
      [workspaceId, ym],
    );
  }

  /** Workspaces with storage recorded in any of these months. */
  async workspacesWithStorage(yms: string[]): Promise<string[]> {
    const rows = await this.txHost.tx.query<{ workspace_id: string }[]>(
      'SELECT DISTINCT workspace_id FROM database_storage_usage WHERE ym = ANY($1)',
      [yms],
    );
    return rows.map((r) => r.workspace_id);
  }
}

const interval = (w: SampleWindow) => `${w.bucketSeconds} seconds`;
