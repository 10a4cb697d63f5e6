import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { DeveloperEntity } from '../../developers/developer.entity';

/**
 * An opaque refresh token (only its SHA-256 is stored). Every use rotates it: the used row gets
 * `usedAt`, a new row joins the same family. Presenting a used token revokes the whole family.
 */
@Entity('oauth_refresh_tokens')
export class RefreshTokenEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'token_hash', type: 'varchar', length: 64, unique: true })
  tokenHash!: string;

  @Index()
  @Column({ name: 'family_id', type: 'uuid' })
  familyId!: string;

  @Column({ name: 'client_id', type: 'varchar', length: 200 })
  clientId!: string;

  @Column({ name: 'developer_id', type: 'uuid' })
  developerId!: string;

  @ManyToOne(() => DeveloperEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'developer_id' })
  developer?: DeveloperEntity;

  @Column({ type: 'text', default: '' })
  scope!: string;

  /** Indexed for the pruning of expired tokens (RefreshTokensService.pruneExpired). */
  @Index('IDX_oauth_refresh_tokens_expires_at')
  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;

  @Column({ name: 'used_at', type: 'timestamptz', nullable: true })
  usedAt!: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt!: Date | null;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;
}
