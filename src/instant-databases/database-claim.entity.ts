import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * An instant database handed out without an account (`POST /databases/provision`) and the code
 * that moves it into a workspace. The code is stored only as its SHA-256. Rows also count the
 * provisioning attempts for the abuse limits, so they are written before the database is made
 * (`databaseId` is null until then).
 */
@Entity('database_claims')
@Index(['created'])
@Index(['clientAddress', 'created'])
// The cap on unclaimed databases counts the live codes at every provision (see unclaimedLive).
@Index('IDX_database_claims_unclaimed_by_expiry', ['expiresAt'], { where: '"claimed_at" IS NULL' })
export class DatabaseClaimEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'database_id', type: 'uuid', nullable: true, unique: true })
  databaseId!: string | null;

  @Column({ name: 'code_hash', type: 'char', length: 64, unique: true })
  codeHash!: string;

  @Column({ name: 'client_address', type: 'varchar', length: 100 })
  clientAddress!: string;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;

  @Column({ name: 'claimed_at', type: 'timestamptz', nullable: true })
  claimedAt!: Date | null;

  @Column({ name: 'claimed_by', type: 'uuid', nullable: true })
  claimedBy!: string | null;

  /**
   * When the attempt failed after its database was made (not built in time, or its credential not
   * made): its database was deleted at once and its code expired with it. Such an attempt no longer
   * counts against its client address, but still against the service's hourly limit.
   */
  @Column({ name: 'failed_at', type: 'timestamptz', nullable: true })
  failedAt!: Date | null;
}
