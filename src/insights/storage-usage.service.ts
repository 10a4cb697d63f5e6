import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';

/** Storage one database held in a month: bytes × seconds summed over its samples. */
export interface StorageHeld {
  databaseId: string;
  /** An exact integer, as text. */
  byteSeconds: string;
}

/** The read side of `database_storage_usage`, which billing rates. */
@Injectable()
export class StorageUsage {
  /** Each database's storage in the workspace's month (databases deleted since included). */
  async ofMonth(workspaceId: string, ym: string, manager: EntityManager): Promise<StorageHeld[]> {
    const rows = await manager.query<{ database_id: string; byte_seconds: string }[]>(
      `SELECT database_id, byte_seconds::text FROM database_storage_usage
        WHERE workspace_id = $1 AND ym = $2 ORDER BY database_id`,
      [workspaceId, ym],
    );
    return rows.map((r) => ({ databaseId: r.database_id, byteSeconds: r.byte_seconds }));
  }

  /** Workspaces with storage recorded in any of these months. */
  async workspacesWithStorage(yms: string[], manager: EntityManager): Promise<string[]> {
    const rows = await manager.query<{ workspace_id: string }[]>(
      'SELECT DISTINCT workspace_id FROM database_storage_usage WHERE ym = ANY($1)',
      [yms],
    );
    return rows.map((r) => r.workspace_id);
  }
}
