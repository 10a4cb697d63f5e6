import type { Pool } from 'pg';
import { QueryFailedError, type DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

/**
 * Runs one read on the metadata pool itself, for the statements nearly every request sends
 * (authentication, membership, the database read, /developers/me) and reads of every row of a big
 * table (the reconciler's): TypeORM's query runner around such a statement cost about as much CPU
 * as the pg client under it, and its entity hydration far more (measured with `npm run bench`).
 * Same pool, same timeouts, and the same errors for the outage check (pg's own, which
 * isDependencyOutage reads). Not for writes (see writeRows) or anything inside a transaction.
 */
export async function readRows<T>(
  dataSource: DataSource,
  statement: string | PreparedRead,
  params: unknown[],
): Promise<T[]> {
  const pool = metadataPool(dataSource);
  if (typeof statement === 'string') return (await pool.query(statement, params)).rows as T[];
  const query = { name: statement.name, text: statement.text, values: params };
  // A migration (another process's: a newer replica booting, the CLI) that changed what the
  // statement returns breaks it on every connection that prepared it before (PostgreSQL answers
  // 0A000 at each run, never planning it again). pool.query lets a connection that failed go, so
  // each attempt here retires one such connection; a new one prepares the statement afresh.
  for (let attempt = 1; ; attempt++) {
    try {
      return (await pool.query(query)).rows as T[];
    } catch (err) {
      if (!isStalePlan(err) || attempt > pool.options.max) throw err;
    }
  }
}

/** PostgreSQL's refusal to run a prepared statement whose result's columns changed under it (0A000). */
function isStalePlan(err: unknown): boolean {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  return code === '0A000' && typeof message === 'string' && message.includes('cached plan must not change result type');
}

/**
 * A read that each pool connection keeps prepared (a named statement): PostgreSQL parses and plans
 * it once per connection instead of at every request. For the constant statements every request
 * sends: planning the authentication read (developer, membership and workspace, and the database
 * when the route names one, in one statement) took 0.6–0.9 ms of PostgreSQL's CPU at each request,
 * several times what running it takes (measured here: 775–945 µs a round trip unnamed, 235–250 µs
 * named), and on a machine the service shares with PostgreSQL that CPU is the requests'. The name
 * must be unique to the text (pg refuses one name for two statements).
 */
export interface PreparedRead {
  name: string;
  text: string;
}

/**
 * Runs one statement that writes, on the metadata pool itself and outside any transaction: the
 * statement is its own transaction, so this is for a change complete in one statement (data-modifying
 * `WITH` included) on a path hot enough for TypeORM's query runner and a `BEGIN`/`COMMIT` pair to
 * show (the invite e-mail's lease and record; measured with `npm run bench`).
 * Errors come wrapped in TypeORM's `QueryFailedError`, as TypeORM's own would, so the error filter
 * (409 on unique violations, 400 on constraint violations) and the outage check treat them alike.
 */
export async function writeRows<T>(dataSource: DataSource, sql: string, params: unknown[]): Promise<T[]> {
  try {
    const { rows } = await metadataPool(dataSource).query(sql, params);
    return rows as T[];
  } catch (err) {
    throw new QueryFailedError(sql, params, err as Error);
  }
}

/** The pg pool under TypeORM's PostgreSQL driver. */
export function metadataPool(dataSource: DataSource): Pool {
  return (dataSource.driver as PostgresDriver).master as Pool;
}
