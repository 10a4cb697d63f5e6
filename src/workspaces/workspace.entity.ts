import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity('workspaces')
export class WorkspaceEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'varchar', length: 200 })
  name!: string;

  /** Lower-case ASCII, globally unique; the workspace's identifier in paths. */
  @Column({ type: 'varchar', length: 200, unique: true })
  slug!: string;

  @Column({ name: 'billing_customer_id', type: 'varchar', length: 200, nullable: true })
  billingCustomerId!: string | null;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;

  /**
   * Counts the changes to the workspace's set of live databases: a trigger on `databases` adds one
   * as each transaction that creates, deletes or moves one of them commits (migration
   * WorkspaceDatabasesVersion). Never written by the service; read by `/developers/me` to know when
   * the ids it remembers are still the workspace's (see DatabaseIdsCache).
   */
  @Column({ name: 'databases_version', type: 'bigint', default: 0, select: false, insert: false, update: false })
  databasesVersion!: string;
}
