import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * Storage held by one database in one month for one workspace: the sum over the samples taken while
 * the workspace held the database of size × seconds the sample stands for (a claimed instant
 * database has a row for the holding workspace and one for the claiming one). Kept apart from the
 * samples (which are pruned) so any month can be rated.
 */
@Entity('database_storage_usage')
@Index(['workspaceId', 'ym'])
// The billing sweep's "workspaces with storage in these months": one row per database and month is
// kept for ever, so the months' rows must be found without reading the others.
@Index('IDX_database_storage_usage_by_month', ['ym', 'workspaceId'])
export class StorageUsageEntity {
  @PrimaryColumn({ name: 'database_id', type: 'uuid' })
  databaseId!: string;

  /** The month, `YYYY-MM` (UTC), of the intervals the samples stand for (each ends at its sample). */
  @PrimaryColumn({ type: 'char', length: 7 })
  ym!: string;

  /** The workspace that held the database when the samples were taken. */
  @PrimaryColumn({ name: 'workspace_id', type: 'uuid' })
  workspaceId!: string;

  @Column({ name: 'byte_seconds', type: 'numeric', precision: 38, scale: 0 })
  byteSeconds!: string;

  @Column({ name: 'observed_seconds', type: 'bigint' })
  observedSeconds!: string;
}
