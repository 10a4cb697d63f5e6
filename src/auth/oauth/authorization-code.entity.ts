import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { DeveloperEntity } from '../../developers/developer.entity';

/** A single-use authorization code; only its SHA-256 is stored. */
@Entity('oauth_authorization_codes')
export class AuthorizationCodeEntity {
  @PrimaryColumn({ name: 'code_hash', type: 'varchar', length: 64 })
  codeHash!: string;

  @Column({ name: 'client_id', type: 'varchar', length: 200 })
  clientId!: string;

  @Column({ name: 'developer_id', type: 'uuid' })
  developerId!: string;

  @ManyToOne(() => DeveloperEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'developer_id' })
  developer?: DeveloperEntity;

  @Column({ name: 'redirect_uri', type: 'text' })
  redirectUri!: string;

  @Column({ name: 'code_challenge', type: 'varchar', length: 128, nullable: true })
  codeChallenge!: string | null;

  @Column({ type: 'text', default: '' })
  scope!: string;

  /** Indexed for the pruning of expired codes (AuthorizationCodesService.pruneExpired). */
  @Index('IDX_oauth_authorization_codes_expires_at')
  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;

  @Column({ name: 'consumed_at', type: 'timestamptz', nullable: true })
  consumedAt!: Date | null;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;
}
