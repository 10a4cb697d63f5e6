import { Injectable } from '@nestjs/common';
import { InsightsRepository } from './insights.repository';

/** Storage one database held in a month: bytes × seconds summed over its samples. */
export interface StorageHeld {
  databaseId: string;
  /** An exact integer, as text. */
  byteSeconds: string;
}

/** The read side of `database_storage_usage`, which billing rates. */
@Injectable()
export class StorageUsage {
  constructor(private readonly insights: InsightsRepository) {}

  /** Each database's storage in the workspace's month (databases deleted since included; in the context's transaction, if any). */
  async ofMonth(workspaceId: string, ym: string): Promise<StorageHeld[]> {
    const rows = await this.insights.storageOfMonth(workspaceId, ym);
    return rows.map((r) => ({ databaseId: r.database_id, byteSeconds: r.byte_seconds }));
  }

  /** Workspaces with storage recorded in any of these months. */
  workspacesWithStorage(yms: string[]): Promise<string[]> {
    return this.insights.workspacesWithStorage(yms);
  }
}
