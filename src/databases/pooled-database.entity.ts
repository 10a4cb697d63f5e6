import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { DataPlaneServerEntity } from '../data-plane/data-plane-server.entity';
import type { Region } from '../config/regions';

/**
 * A pre-built, unassigned physical database of the warm pool. `ready` is false while the pool
 * job builds it; a create takes a ready one (row deleted in the same transaction).
 */
@Entity('pooled_databases')
@Index(['region', 'ready'])
@Index(['serverId', 'ready'])
export class PooledDatabaseEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'varchar', length: 40 })
  region!: Region;

  /** The data-plane server it is built on (null only on rows from before the fleet, until boot attaches them). */
  @Column({ name: 'server_id', type: 'uuid', nullable: true })
  serverId!: string | null;

  @ManyToOne(() => DataPlaneServerEntity, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'server_id' })
  server?: DataPlaneServerEntity;

  @Column({ name: 'physical_name', type: 'varchar', length: 63, unique: true })
  physicalName!: string;

  @Column({ type: 'boolean', default: false })
  ready!: boolean;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError!: string | null;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;
}
