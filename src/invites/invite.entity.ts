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
import { DeveloperEntity } from '../developers/developer.entity';
import { WorkspaceEntity } from '../workspaces/workspace.entity';

/** Stored states. EXPIRED is derived on read from `expiresAt` (and stored when an expired code is presented). */
export enum InviteState {
  EmailPending = 'EMAIL_PENDING',
  EmailSent = 'EMAIL_SENT',
  Verified = 'VERIFIED',
  Expired = 'EXPIRED',
}

@Entity('invites')
@Index(['workspaceId', 'email'], { unique: true, where: `"state" IN ('EMAIL_PENDING', 'EMAIL_SENT')` })
// The reconciler's read of the invites still owed an e-mail (not the sent, accepted or given-up ones).
@Index('IDX_invites_email_owed', ['expiresAt'], { where: `"state" = 'EMAIL_PENDING' AND "email_sent_at" IS NULL` })
export class InviteEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'workspace_id', type: 'uuid' })
  workspaceId!: string;

  @ManyToOne(() => WorkspaceEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'workspace_id' })
  workspace?: WorkspaceEntity;

  @Column({ name: 'sender_id', type: 'uuid' })
  senderId!: string;

  @ManyToOne(() => DeveloperEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'sender_id' })
  sender?: DeveloperEntity;

  /** Lower-cased invitee address. */
  @Column({ type: 'varchar', length: 320 })
  email!: string;

  /** SHA-256 of the invite code; the code itself is only in the e-mail (and the programmatic response). */
  @Column({ name: 'code_hash', type: 'varchar', length: 64, unique: true })
  codeHash!: string;

  /** The code encrypted for the e-mail job (AES-GCM); cleared once the e-mail is sent. */
  @Column({ name: 'code_ciphertext', type: 'text', nullable: true, select: false })
  codeCiphertext!: string | null;

  @Column({ type: 'enum', enum: InviteState, enumName: 'invite_state', default: InviteState.EmailPending })
  state!: InviteState;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;

  @Column({ name: 'email_sent_at', type: 'timestamptz', nullable: true })
  emailSentAt!: Date | null;

  /** While set and in the future, one job is sending the e-mail (taken and released in short transactions). */
  @Column({ name: 'email_lease_until', type: 'timestamptz', nullable: true })
  emailLeaseUntil!: Date | null;

  @Column({ name: 'email_attempts', type: 'int', default: 0 })
  emailAttempts!: number;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError!: string | null;

  @Column({ name: 'accepted_by', type: 'uuid', nullable: true })
  acceptedBy!: string | null;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updated!: Date;
}
