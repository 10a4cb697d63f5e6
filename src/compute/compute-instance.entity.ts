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
import { DatabaseEntity } from '../databases/database.entity';
import { ComputeTypeEntity } from './compute-type.entity';

export enum ComputeInstanceStatus {
  Pending = 'PENDING',
  Provisioning = 'PROVISIONING',
  Ready = 'READY',
  Resizing = 'RESIZING',
  Deleting = 'DELETING',
  Failed = 'FAILED',
  Terminated = 'TERMINATED',
}

/**
 * A dedicated compute instance of a database. The row is the desired state: `desiredInstanceType`
 * differing from `instanceType` means "provision or resize", `deleted` set means "tear down".
 */
@Entity('compute_instances')
@Index(['databaseId', 'created'])
// A database's instances not terminated, oldest first: the cap's count at every create, the list
// without a window, the envelope's reads and the compute sweep's, none of which may read the
// terminated ones a database gathers over its life.
@Index('IDX_compute_instances_unterminated_by_database', ['databaseId', 'created', 'id'], {
  where: '"terminated" IS NULL',
})
// The reconciler's sweep: instances not in their desired state (unsettled), least recently updated first.
@Index('IDX_compute_instances_unsettled', ['updated'], {
  where: `"terminated" IS NULL AND ("deleted" IS NOT NULL OR "status" <> 'READY' OR "instance_type_id" IS DISTINCT FROM "desired_instance_type_id")`,
})
export class ComputeInstanceEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'database_id', type: 'uuid' })
  databaseId!: string;

  @ManyToOne(() => DatabaseEntity, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'database_id' })
  database?: DatabaseEntity;

  @Column({ type: 'varchar', length: 512 })
  name!: string;

  /** The type the instance runs as now; null until first provisioned. */
  @Column({ name: 'instance_type_id', type: 'varchar', length: 40, nullable: true })
  instanceTypeId!: string | null;

  @ManyToOne(() => ComputeTypeEntity, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'instance_type_id' })
  instanceType?: ComputeTypeEntity | null;

  @Column({ name: 'desired_instance_type_id', type: 'varchar', length: 40 })
  desiredInstanceTypeId!: string;

  @ManyToOne(() => ComputeTypeEntity, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'desired_instance_type_id' })
  desiredInstanceType?: ComputeTypeEntity;

  @Column({
    type: 'enum',
    enum: ComputeInstanceStatus,
    enumName: 'compute_instance_status',
    default: ComputeInstanceStatus.Pending,
  })
  status!: ComputeInstanceStatus;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError!: string | null;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updated!: Date;

  /** When deletion was requested (the instance leaves the database's list at once). */
  @Column({ type: 'timestamptz', nullable: true })
  deleted!: Date | null;

  /** When deletion was finalized (all its data gone). */
  @Column({ type: 'timestamptz', nullable: true })
  terminated!: Date | null;
}
