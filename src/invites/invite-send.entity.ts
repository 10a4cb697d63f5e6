import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * One invite e-mail owed to `email` on `senderId`'s word, written with the invite it belongs to. It
 * counts against the invite e-mail limits (INVITES_PER_SENDER_PER_HOUR, INVITES_PER_RECIPIENT_PER_HOUR)
 * and outlives the invite: deleting an invite does not give its e-mail back, or invite, delete and
 * invite again would mail one address without end. No foreign keys for the same reason (a workspace
 * or account deleted must not take its count along). The reconciler deletes rows older than the hour.
 */
@Entity('invite_sends')
@Index(['senderId', 'created'])
@Index(['email', 'created'])
@Index(['created'])
export class InviteSendEntity {
  @PrimaryGeneratedColumn('increment', { type: 'bigint' })
  id!: string;

  @Column({ name: 'sender_id', type: 'uuid' })
  senderId!: string;

  /** Lower-cased recipient address, as on the invite. */
  @Column({ type: 'varchar', length: 320 })
  email!: string;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;
}
