import { Client, type Pool, type PoolClient } from 'pg';
import { withinMs } from '../common/within-ms';
import { isDatabaseFull, isUnavailability } from './data-plane.service';
import { assertPhysicalName } from './physical-names';
import { tenantDatabaseConnection } from './tenant-session';

/**
 * The telemetry SQL run on a data-plane server: read-only queries of its statistics views, and
 * the ready probe of one database. Every query is bounded by a statement timeout; names only ever
 * travel as bind parameters.
 */

/** Cumulative counters of one database in `pg_stat_database` (null where the server has no such column). */
export interface DatabaseCounters {
  physicalName: string;
  sizeBytes: string | null;
  xactRollback: string;
  deadlocks: string;
  conflicts: string;
  /** PostgreSQL 14+ only. */
  sessionsAbandoned: string | null;
  sessionsFatal: string | null;
  sessionsKilled: string | null;
}

/** Cumulative `pg_stat_statements` figures of one database (all its users and statements). */
export interface StatementCounters {
  physicalName: string;
  calls: string;
  execTimeMs: number;
}

/** Error counters of `pg_stat_database`, each the `source` named in the errors insight. */
export const ERROR_COUNTERS = [
  'xact_rollback',
  'deadlocks',
  'conflicts',
  'sessions_abandoned',
  'sessions_fatal',
  'sessions_killed',
] as const;
export type ErrorCounter = (typeof ERROR_COUNTERS)[number];

const SESSION_COUNTERS_SINCE = 140000;
/** SQLSTATEs meaning "pg_stat_statements is not there": undefined table, not preloaded. */
const STATEMENTS_MISSING = ['42P01', '55000', '42883'];

export class ServerTelemetry {
  constructor(
    private readonly admin: Pool,
    private readonly statementTimeoutMs: number,
  ) {}

  /** `server_version_num` of the server (e.g. 150020). */
  async serverVersion(): Promise<number> {
    const { rows } = await this.admin.query<{ v: string }>("SELECT current_setting('server_version_num') AS v");
    return Number(rows[0].v);
  }

  /**
   * Size and error counters of the given databases, one query for all of them. A database dropped
   * meanwhile is simply absent (its size is read only while it still exists).
   */
  async databaseCounters(physicalNames: string[]): Promise<DatabaseCounters[]> {
    if (!physicalNames.length) return [];
    const sessions = (await this.serverVersion()) >= SESSION_COUNTERS_SINCE;
    const sessionColumns = sessions
      ? 's.sessions_abandoned::text, s.sessions_fatal::text, s.sessions_killed::text'
      : 'NULL::text AS sessions_abandoned, NULL::text AS sessions_fatal, NULL::text AS sessions_killed';
    return this.withTimeout(async (db) => {
      const { rows } = await db.query<{
        datname: string;
        size: string | null;
        xact_rollback: string;
        deadlocks: string;
        conflicts: string;
        sessions_abandoned: string | null;
        sessions_fatal: string | null;
        sessions_killed: string | null;
      }>(
        `SELECT d.datname,
                CASE WHEN has_database_privilege(d.oid, 'CONNECT') OR pg_has_role('pg_read_all_stats', 'USAGE')
                     THEN pg_database_size(d.oid)::text END AS size,
                s.xact_rollback::text, s.deadlocks::text, s.conflicts::text, ${sessionColumns}
           FROM pg_database d JOIN pg_stat_database s ON s.datid = d.oid
          WHERE d.datname = ANY($1)`,
        [physicalNames],
      );
      return rows.map((r) => ({
        physicalName: r.datname,
        sizeBytes: r.size,
        xactRollback: r.xact_rollback,
        deadlocks: r.deadlocks,
        conflicts: r.conflicts,
        sessionsAbandoned: r.sessions_abandoned,
        sessionsFatal: r.sessions_fatal,
        sessionsKilled: r.sessions_killed,
      }));
    });
  }

  /**
   * Calls and execution time per database from `pg_stat_statements`, or null when the extension
   * is not loaded on the server (not in shared_preload_libraries, or not created in the admin's
   * database). Statements of other users are visible to a superuser or a member of pg_read_all_stats;
   * the admin's own (provisioning, the ready probe) are left out, so the figures are customers' work.
   */
  async statementCounters(physicalNames: string[]): Promise<StatementCounters[] | null> {
    return this.withTimeout(async (db) => {
      try {
        const { rows } = await db.query<{ datname: string; calls: string; exec_ms: number }>(
          `SELECT d.datname, sum(s.calls)::text AS calls, sum(s.total_exec_time)::float8 AS exec_ms
             FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
            WHERE d.datname = ANY($1)
              AND s.userid <> (SELECT oid FROM pg_roles WHERE rolname = current_user)
            GROUP BY d.datname`,
          [physicalNames],
        );
        return rows.map((r) => ({ physicalName: r.datname, calls: r.calls, execTimeMs: Number(r.exec_ms) }));
      } catch (err) {
        if (STATEMENTS_MISSING.includes((err as { code?: string }).code ?? '')) return null;
        throw err;
      }
    });
  }

  /** Runs the reads in one transaction whose statement timeout is this pass's (SET LOCAL ends with it). */
  private async withTimeout<T>(work: (db: PoolClient) => Promise<T>): Promise<T> {
    const db = await this.admin.connect();
    let broken: Error | undefined;
    try {
      await db.query('BEGIN READ ONLY');
      await db.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(this.statementTimeoutMs))}`);
      const result = await work(db);
      await db.query('COMMIT');
      return result;
    } catch (err) {
      broken = err instanceof Error ? err : new Error(String(err));
      throw err;
    } finally {
      db.release(broken);
    }
  }
}

/**
 * What a ready probe found: `up` (the database answered `SELECT 1`, or refused the probe only because
 * its customers hold every session of its CONNECTION LIMIT), `down` (the server answered and
 * refused or failed it: the database is not there, not accepting connections, …) or `unanswered`
 * (no answer within the timeout, or a failure that says the server is not answering as it should:
 * refused connection, too many clients, starting up; see isUnavailability). Both of the last count
 * as down; `unanswered` also tells the pass about the server.
 */
export type ProbeOutcome = 'up' | 'down' | 'unanswered';

/** The ready probe: connects to the database and runs `SELECT 1`, all within `timeoutMs`. */
export async function probeDatabase(
  databaseUrl: (physical: string) => string,
  physical: string,
  timeoutMs: number,
): Promise<ProbeOutcome> {
  const client = new Client({
    // In a tenant's database: nothing of theirs in `public` is resolved (see tenantDatabaseConnection).
    ...tenantDatabaseConnection(databaseUrl(assertPhysicalName(physical))),
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
    statement_timeout: timeoutMs,
    application_name: 'control-plane-probe',
  });
  client.on('error', () => undefined);
  const probe = (async (): Promise<ProbeOutcome> => {
    await client.connect();
    const { rows } = await client.query<{ one: number }>('SELECT 1 AS one');
    return rows[0]?.one === 1 ? 'up' : 'down';
  })();
  const timedOut = new Error(`no answer within ${timeoutMs} ms`);
  try {
    return await withinMs(probe, timeoutMs, () => timedOut);
  } catch (err) {
    // Refused by the database's own CONNECTION LIMIT (the admin is counted when it is no superuser):
    // its customers hold every session it allows, which is the database serving them, not an outage.
    if (isDatabaseFull(err)) return 'up';
    return err === timedOut || isUnavailability(err) ? 'unanswered' : 'down';
  } finally {
    await client.end().catch(() => undefined);
  }
}
