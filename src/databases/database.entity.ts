import {
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryGeneratedColumn,
  UpdateDateColumn,
} from 'typeorm';
import type { Region } from '../config/regions';
import { DataPlaneServerEntity } from '../data-plane/data-plane-server.entity';
import { WorkspaceEntity } from '../workspaces/workspace.entity';

export enum DatabaseStatus {
  Pending = 'PENDING',
  Requested = 'REQUESTED',
  Built = 'BUILT',
  Pooled = 'POOLED',
  Ready = 'READY',
}

/**
 * A customer database. The row is the desired state: REQUESTED means "build it", a `deleted`
 * timestamp with no `finalized` means "drop it once deletionDueAt has passed". Finalized rows stay
 * as tombstones for billing history.
 */
@Entity('databases')
@Index(['workspaceId', 'name'], { unique: true, where: '"deleted" IS NULL' })
@Index(['workspaceId', 'created'])
// Live databases in (created, id) order: the list's keyset pages and /developers/me read it without sorting.
@Index('IDX_databases_live_by_created', ['workspaceId', 'created', 'id'], { where: '"deleted" IS NULL' })
// The reconciler's sweeps, which read only work still owed (not the tombstones): deletions not yet
// finalized, by due time; builds not yet done (deleted ones too, until finalized), each server's oldest first.
@Index('IDX_databases_deletion_due', ['deletionDueAt'], { where: '"deleted" IS NOT NULL AND "finalized" IS NULL' })
// A workspace's databases queued for deletion, by due time: every create within a limited plan counts
// them (and reads the first due), which must not read the workspace's tombstones.
@Index('IDX_databases_queued_by_workspace', ['workspaceId', 'deletionDueAt'], {
  where: '"deleted" IS NOT NULL AND "finalized" IS NULL',
})
@Index('IDX_databases_unbuilt_by_server', ['serverId', 'created', 'id'], {
  where: `"status" IN ('REQUESTED', 'BUILT') AND "finalized" IS NULL`,
})
// Each server's databases not finalized, in (created, id) order, tombstones left out: the insights
// sampler's read of a server's READY ones (the few not READY yet are filtered), placement's usage
// count (under the region's placement lock, on every create) and the control_plane_databases gauge
// (every scrape).
@Index('IDX_databases_unfinalized_by_server', ['serverId', 'created', 'id'], { where: '"finalized" IS NULL' })
export class DatabaseEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'workspace_id', type: 'uuid' })
  workspaceId!: string;

  @ManyToOne(() => WorkspaceEntity, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'workspace_id' })
  workspace?: WorkspaceEntity;

  @Column({ type: 'varchar', length: 63 })
  name!: string;

  @Column({ type: 'varchar', length: 40 })
  region!: Region;

  @Column({ type: 'boolean', default: false })
  sharded!: boolean;

  /**
   * The data-plane server it lives on (placed at create). Null only on rows from before the fleet
   * existed, until the boot that registers their region's server attaches them.
   */
  @Index()
  @Column({ name: 'server_id', type: 'uuid', nullable: true })
  serverId!: string | null;

  @ManyToOne(() => DataPlaneServerEntity, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'server_id' })
  server?: DataPlaneServerEntity;

  @Column({ type: 'enum', enum: DatabaseStatus, enumName: 'database_status', default: DatabaseStatus.Requested })
  status!: DatabaseStatus;

  /** Name of the PostgreSQL database on the region's server; never derived from the user's name. */
  @Column({ name: 'physical_name', type: 'varchar', length: 63, unique: true })
  physicalName!: string;

  /** The last provisioning or finalization failure, for operators. */
  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError!: string | null;

  @Column({ name: 'provision_attempts', type: 'int', default: 0 })
  provisionAttempts!: number;

  @Column({ type: 'timestamptz', nullable: true })
  deleted!: Date | null;

  @Column({ name: 'deletion_due_at', type: 'timestamptz', nullable: true })
  deletionDueAt!: Date | null;

  @Column({ type: 'timestamptz', nullable: true })
  finalized!: Date | null;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updated!: Date;
}
