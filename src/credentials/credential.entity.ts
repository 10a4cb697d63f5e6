import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { DatabaseEntity } from '../databases/database.entity';
import { CredentialRotationEntity } from './credential-rotation.entity';

/**
 * The group a credential belongs to: its tenant (or none) and whether it is internal. A rotation
 * replaces the credentials of one group only.
 */
export interface CredentialGroup {
  tenant: string | null;
  internal: boolean;
}

/**
 * A credential is a PostgreSQL role on the database's server; `id` is the role name. The password
 * is stored only encrypted. `expiresAt` set means "drop the role at that time"; `dropped` records it done.
 */
@Entity('credentials')
@Index(['databaseId', 'created'])
// A database's credentials not dropped, oldest first: the plan's count at every create, the list and
// the rotations' reads, none of which may read the dropped ones a database gathers over its life.
@Index('IDX_credentials_live_by_database', ['databaseId', 'created', 'id'], { where: '"dropped" IS NULL' })
// The expiry sweep's read (due expiries, and the waiting ones it schedules): only credentials with an
// expiry still to carry out, not the dropped ones, which keep theirs for good.
@Index('IDX_credentials_expiry_due', ['expiresAt'], { where: '"dropped" IS NULL AND "expires_at" IS NOT NULL' })
// Creates still pending (intent written, outcome not yet recorded): the sweep gives up stuck ones.
@Index('IDX_credentials_pending_by_created', ['created'], {
  where: '"pending" AND "dropped" IS NULL AND "expires_at" IS NULL',
})
export class CredentialEntity {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ name: 'database_id', type: 'uuid' })
  databaseId!: string;

  @ManyToOne(() => DatabaseEntity, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'database_id' })
  database?: DatabaseEntity;

  /** AES-256-GCM ciphertext of the password, `keyId:iv:tag:data` (base64 parts). */
  @Column({ name: 'password_ciphertext', type: 'text', select: false })
  passwordCiphertext!: string;

  @Column({ type: 'boolean', default: false })
  internal!: boolean;

  /**
   * The intent of a create not yet confirmed on the data plane (the row is written and committed
   * before the role is made). Pending credentials are never listed; one whose create failed or was
   * abandoned gets an expiry, and the expiry sweep drops whatever role it may have left.
   */
  @Column({ type: 'boolean', default: false })
  pending!: boolean;

  /**
   * Issued by a rotation, whose plan check is decided when it is confirmed (with the other
   * rotations of the database, in turn): while pending, a rotation does not count it as working,
   * as it does a create's (which is confirmed with no check after its intent's).
   */
  @Column({ name: 'issued_by_rotation', type: 'boolean', default: false })
  issuedByRotation!: boolean;

  @Column({ type: 'varchar', length: 200, nullable: true })
  tenant!: string | null;

  @Column({ name: 'created_by', type: 'uuid', nullable: true })
  createdBy!: string | null;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt!: Date | null;

  @Column({ name: 'expired_by_rotation_id', type: 'uuid', nullable: true })
  expiredByRotationId!: string | null;

  @ManyToOne(() => CredentialRotationEntity, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'expired_by_rotation_id' })
  expiredByRotation?: CredentialRotationEntity;

  @Column({ type: 'timestamptz', nullable: true })
  dropped!: Date | null;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;
}
