import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * One create or change of size of a database's dedicated compute, written with it. It counts against
 * COMPUTE_CHANGES_PER_DATABASE_PER_DAY: each opens a usage period (a billing line kept for good) and
 * has the data plane apply an envelope. No foreign key, so nothing deleted takes its count along; the
 * reconciler deletes rows older than the day.
 */
@Entity('compute_changes')
@Index(['databaseId', 'created'])
@Index(['created'])
export class ComputeChangeEntity {
  @PrimaryGeneratedColumn('increment', { type: 'bigint' })
  id!: string;

  @Column({ name: 'database_id', type: 'uuid' })
  databaseId!: string;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;
}
