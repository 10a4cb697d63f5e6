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
}
