import type { Region } from '../config/regions';
import { DatabaseEntity, type DatabaseStatus } from './database.entity';

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

const PREFIXED = COLUMN_NAMES.map((column) => [column, `db_${column}`] as const);

/**
 * The database in a row read with prefixedDatabaseColumns; null when the row has none. On every
 * request that names a database (authentication reads it): the prefixed names are made once.
 */
export function prefixedDatabase(row: Record<string, unknown>): DatabaseEntity | null {
  if (row.db_id === null || row.db_id === undefined) return null;
  const unprefixed: Record<string, unknown> = {};
  for (const [column, prefixed] of PREFIXED) unprefixed[column] = row[prefixed];
  return toDatabase(unprefixed as unknown as DatabaseRow);
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
