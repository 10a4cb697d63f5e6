import type { Region } from '../config/regions';
import { DatabaseEntity, DatabaseStatus } from './database.entity';

/** Every column of `databases`, for raw reads on hot paths (no query building, no hydration). */
export const DATABASE_COLUMNS = `id, workspace_id, name, region, sharded, server_id, status, physical_name, last_error,
       provision_attempts, deleted, deletion_due_at, finalized, created, updated`;

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
