import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import type { Region } from '../config/regions';

/**
 * A pre-built, unassigned physical database of the warm pool. `ready` is false while the pool
 * job builds it; a create takes a ready one (row deleted in the same transaction).
 */
@Entity('pooled_databases')
@Index(['region', 'ready'])
export class PooledDatabaseEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'varchar', length: 40 })
  region!: Region;

  @Column({ name: 'physical_name', type: 'varchar', length: 63, unique: true })
  physicalName!: string;

  @Column({ type: 'boolean', default: false })
  ready!: boolean;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError!: string | null;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;
}
