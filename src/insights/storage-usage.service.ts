import { Injectable } from '@nestjs/common';
import { MetadataTransactions } from '../database/metadata-transactions';

/** Storage one database held in a month: bytes × seconds summed over its samples. */
export interface StorageHeld {
  databaseId: string;
  /** An exact integer, as text. */
  byteSeconds: string;
}

/** The read side of `database_storage_usage`, which billing rates. */
@Injectable()
export class StorageUsage {
  constructor(private readonly txHost: MetadataTransactions) {}

  /** Each database's storage in the workspace's month (databases deleted since included; in the context's transaction, if any). */
  async ofMonth(workspaceId: string, ym: string): Promise<StorageHeld[]> {
    const rows = await this.txHost.tx.query<{ database_id: string; byte_seconds: string }[]>(
      `SELECT database_id, byte_seconds::text FROM database_storage_usage
        WHERE workspace_id = $1 AND ym = $2 ORDER BY database_id`,
      [workspaceId, ym],
    );
    return rows.map((r) => ({ databaseId: r.database_id, byteSeconds: r.byte_seconds }));
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
