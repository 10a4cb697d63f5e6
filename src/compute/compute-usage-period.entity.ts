import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { numericTransformer } from '../database/numeric.transformer';

/**
 * A span during which an instance ran at one size: opened when it becomes READY (or is resized),
 * closed on resize or termination. Metrics (vCPU-hours) and billing (rated lines) read these.
 * Denormalised (workspace, database, vcpus, price) so history survives later changes.
 */
@Entity('compute_usage_periods')
@Index(['workspaceId', 'startedAt'])
@Index(['instanceId'], { unique: true, where: '"ended_at" IS NULL' })
// The billing sweep's "periods overlapping these months" (open ones and those ended since): both
// conditions are ranges of this one index, not a read of all history.
@Index('IDX_compute_usage_periods_ended_at', ['endedAt'])
export class ComputeUsagePeriodEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'instance_id', type: 'uuid' })
  instanceId!: string;

  @Column({ name: 'database_id', type: 'uuid' })
  databaseId!: string;

  @Column({ name: 'workspace_id', type: 'uuid' })
  workspaceId!: string;

  @Column({ name: 'instance_type_id', type: 'varchar', length: 40 })
  instanceTypeId!: string;

  @Column({ name: 'compute_size', type: 'varchar', length: 40 })
  computeSize!: string;

  @Column({ type: 'int' })
  vcpus!: number;

  @Column({ name: 'hourly_cost', type: 'numeric', precision: 10, scale: 4, transformer: numericTransformer })
  hourlyCost!: number;

  @Column({ name: 'started_at', type: 'timestamptz' })
  startedAt!: Date;

  @Column({ name: 'ended_at', type: 'timestamptz', nullable: true })
  endedAt!: Date | null;
}
