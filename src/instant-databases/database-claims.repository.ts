import { Injectable } from '@nestjs/common';
import { IsNull, MoreThan, type Repository } from 'typeorm';
import { MetadataTransactions } from '../database/metadata-transactions';
import { lockForContextTransaction } from '../database/transaction-lock';
import { DatabaseClaimEntity } from './database-claim.entity';

/**
 * Every statement on `database_claims` (habit 15). Statements go through the transaction the context
 * carries (MetadataTransactions): inside its withTransaction they join it, outside they run on their
 * own.
 */
@Injectable()
export class DatabaseClaimsRepository {
  constructor(private readonly txHost: MetadataTransactions) {}

  private get repo(): Repository<DatabaseClaimEntity> {
    return this.txHost.tx.getRepository(DatabaseClaimEntity);
  }

  /** Serialises the admissions (abuse-limit counts) for the rest of the context's transaction. */
  lockAdmissions(): Promise<void> {
    return lockForContextTransaction(this.txHost, 'instant-databases');
  }

  save(row: Partial<DatabaseClaimEntity>): Promise<DatabaseClaimEntity> {
    return this.repo.save(this.repo.create(row));
  }

  async update(id: string, changes: Partial<DatabaseClaimEntity>): Promise<void> {
    await this.repo.update({ id }, changes);
  }

  /**
   * Creation times of the address's claims since `since` that count against it (not failed after
   * their database was made), oldest first, up to `take`.
   */
  createdSinceBy(clientAddress: string, since: Date, take: number): Promise<Pick<DatabaseClaimEntity, 'created'>[]> {
    return this.repo.find({
      select: { created: true },
      where: { clientAddress, created: MoreThan(since), failedAt: IsNull() },
      order: { created: 'ASC' },
      take,
    });
  }

  countSince(since: Date): Promise<number> {
    return this.repo.count({ where: { created: MoreThan(since) } });
  }

  /**
   * How many codes are live and unclaimed at `now` (not claimed, not expired: their database is held
   * for them, or an attempt in flight is making it) and when the first of them expires. Through the
   * partial index of unclaimed codes by expiry, so it reads the live ones only, however many expired
   * codes history holds.
   */
  async unclaimedLive(now: Date): Promise<{ live: number; firstExpiry: Date | null }> {
    const row = await this.repo
      .createQueryBuilder('c')
      .select('count(*)::int', 'live')
      .addSelect('min(c.expires_at)', 'firstExpiry')
      .where('c.claimed_at IS NULL AND c.expires_at > :now', { now })
      .getRawOne<{ live: number; firstExpiry: Date | null }>();
    return { live: row?.live ?? 0, firstExpiry: row?.firstExpiry ?? null };
  }

  /**
   * Expires an unclaimed code at `now` without marking it failed: it stops holding a place under the
   * cap on unclaimed codes and still counts against its client address.
   */
  async expire(id: string, now: Date): Promise<void> {
    await this.repo.update({ id, claimedAt: IsNull() }, { expiresAt: now });
  }

  /** Expires, as `expire` does, the unclaimed code of the database if it has not expired yet. */
  async expireOfDatabase(databaseId: string, now: Date): Promise<void> {
    await this.repo.update({ databaseId, claimedAt: IsNull(), expiresAt: MoreThan(now) }, { expiresAt: now });
  }

  /**
   * Records that the claim's attempt failed: its code expires now (never claimable, no longer live
   * for the cap) and it stops counting against its address.
   */
  async markFailed(id: string, now: Date): Promise<void> {
    await this.repo.update({ id, claimedAt: IsNull() }, { failedAt: now, expiresAt: now });
  }

  /** The creation time of the oldest claim since `since`. */
  async oldestSince(since: Date): Promise<Date | undefined> {
    const [oldest] = await this.repo.find({
      select: { created: true },
      where: { created: MoreThan(since) },
      order: { created: 'ASC' },
      take: 1,
    });
    return oldest?.created;
  }

  /**
   * The unclaimed, unexpired claim of the code that has a database, locked (FOR UPDATE) for the rest
   * of the context's transaction (refused outside one).
   */
  lockClaimable(codeHash: string): Promise<DatabaseClaimEntity | null> {
    return this.txHost
      .rowLocking(DatabaseClaimEntity, 'c', 'a claim row lock')
      .where('c.code_hash = :hash AND c.claimed_at IS NULL AND c.expires_at > now() AND c.database_id IS NOT NULL', {
        hash: codeHash,
      })
      .getOne();
  }

  /**
   * Up to `take` unclaimed claims of these databases whose code expired by `now`, the longest expired
   * first. Found through the unique index on `database_id`, so a pass costs what the databases named
   * cost, however many claims history holds.
   */
  async expiredOf(
    databaseIds: string[],
    now: Date,
    take: number,
  ): Promise<Pick<DatabaseClaimEntity, 'id' | 'databaseId'>[]> {
    if (!databaseIds.length) return [];
    return this.repo
      .createQueryBuilder('c')
      .select(['c.id', 'c.databaseId'])
      .where('c.database_id = ANY(CAST(:databaseIds AS uuid[]))', { databaseIds })
      .andWhere('c.claimed_at IS NULL AND c.expires_at <= :now', { now })
      .orderBy('c.expires_at', 'ASC')
      .addOrderBy('c.id', 'ASC')
      .limit(take)
      .getMany();
  }
}
