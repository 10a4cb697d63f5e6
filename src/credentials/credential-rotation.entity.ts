import { Column, CreateDateColumn, Entity, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { DatabaseEntity } from '../databases/database.entity';

/** One call of the rotate operation: why, by whom, and when the credentials it superseded expire. */
@Entity('credential_rotations')
export class CredentialRotationEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'database_id', type: 'uuid' })
  databaseId!: string;

  @ManyToOne(() => DatabaseEntity, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'database_id' })
  database?: DatabaseEntity;

  @Column({ name: 'new_credential_id', type: 'uuid' })
  newCredentialId!: string;

  @Column({ type: 'text', default: '' })
  reason!: string;

  @Column({ name: 'delay_hours', type: 'int' })
  delayHours!: number;

  @Column({ name: 'old_expire_at', type: 'timestamptz' })
  oldExpireAt!: Date;

  @Column({ name: 'requested_by', type: 'uuid', nullable: true })
  requestedBy!: string | null;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;
}
