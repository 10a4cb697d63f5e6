import type { DataSource } from 'typeorm';
import type { Region } from '../config/regions';
import { readRows } from '../database/hot-query';
import { DatabaseEntity, DatabaseStatus } from './database.entity';

const COLUMN_NAMES = [
  'id',
  'workspace_id',
  'name',
  'region',
  'sharded',
  'server_id',
  'status',
  'physical_name',
  'last_error',
  'provision_attempts',
  'deleted',
  'deletion_due_at',
  'finalized',
  'created',
  'updated',
] as const;

/** Every column of `databases`, for raw reads on hot paths (no query building, no hydration). */
export const DATABASE_COLUMNS = COLUMN_NAMES.join(', ');

/** The same columns of the row aliased `alias`, each named `db_<column>` (beside other tables' columns). */
export function prefixedDatabaseColumns(alias: string): string {
  return COLUMN_NAMES.map((column) => `${alias}.${column} AS db_${column}`).join(', ');
}

/** The database in a row read with prefixedDatabaseColumns; null when the row has none. */
export function prefixedDatabase(row: Record<string, unknown>): DatabaseEntity | null {
  if (row.db_id === null || row.db_id === undefined) return null;
  return toDatabase(Object.fromEntries(COLUMN_NAMES.map((c) => [c, row[`db_${c}`]])) as unknown as DatabaseRow);
}

/** A `databases` row as raw SQL returns it. */
export interface DatabaseRow {
  id: string;
  workspace_id: string;
  name: string;
  region: Region;
  sharded: boolean;
  server_id: string | null;
  status: DatabaseStatus;
  physical_name: string;
  last_error: string | null;
  provision_attempts: number;
  deleted: Date | null;
  deletion_due_at: Date | null;
  finalized: Date | null;
  created: Date;
  updated: Date;
}

export function toDatabase(row: DatabaseRow): DatabaseEntity {
  return Object.assign(new DatabaseEntity(), {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    region: row.region,
    sharded: row.sharded,
    serverId: row.server_id,
    status: row.status,
    physicalName: row.physical_name,
    lastError: row.last_error,
    provisionAttempts: row.provision_attempts,
    deleted: row.deleted,
    deletionDueAt: row.deletion_due_at,
    finalized: row.finalized,
    created: row.created,
    updated: row.updated,
  });
}

/** The database row by id, whatever its state (one raw statement); null when there is none. */
export async function readDatabase(dataSource: DataSource, id: string): Promise<DatabaseEntity | null> {
  const [row] = await readRows<DatabaseRow>(dataSource, `SELECT ${DATABASE_COLUMNS} FROM databases WHERE id = $1`, [
    id,
  ]);
  return row ? toDatabase(row) : null;
}

/**
 * Records a verified build: READY, unless the row moved on meanwhile (then nothing changes). One
 * raw statement: it sits on the path from create to READY.
 */
export async function markReady(dataSource: DataSource, id: string, provisionAttempts: number): Promise<void> {
  await dataSource.query(
    `UPDATE databases SET status = $3, last_error = NULL, provision_attempts = $2, updated = now()
      WHERE id = $1 AND status IN ($4, $5)`,
    [id, provisionAttempts, DatabaseStatus.Ready, DatabaseStatus.Requested, DatabaseStatus.Built],
  );
}
