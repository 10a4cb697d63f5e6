import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

/**
 * Runs one read on the metadata pool itself, for the statements nearly every request sends
 * (authentication, membership, the database read, /developers/me) and reads of every row of a big
 * table (the reconciler's): TypeORM's query runner around such a statement cost about as much CPU
 * as the pg client under it, and its entity hydration far more (measured with `npm run bench`).
 * Same pool, same timeouts, and the same errors for the outage check (pg's own, which
 * isDependencyOutage reads). Not for writes or anything inside a transaction: those go through TypeORM.
 */
export async function readRows<T>(dataSource: DataSource, sql: string, params: unknown[]): Promise<T[]> {
  const pool = (dataSource.driver as PostgresDriver).master as Pool;
  const { rows } = await pool.query(sql, params);
  return rows as T[];
}
