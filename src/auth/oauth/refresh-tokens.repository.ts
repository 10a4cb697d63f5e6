import { Injectable } from '@nestjs/common';
import { IsNull, type Repository } from 'typeorm';
import { MetadataTransactions } from '../../database/metadata-transactions';
import { RefreshTokenEntity } from './refresh-token.entity';
import { deleteExpiredRows } from './expired-grants';

/**
 * Every statement on `refresh_tokens` (habit 15). Statements go through the transaction the context
 * carries (MetadataTransactions): inside its withTransaction they join it, outside they run on their
 * own.
 */
@Injectable()
export class RefreshTokensRepository {
  constructor(private readonly txHost: MetadataTransactions) {}

  private get repo(): Repository<RefreshTokenEntity> {
    return this.txHost.tx.getRepository(RefreshTokenEntity);
  }

  async insert(row: Partial<RefreshTokenEntity>): Promise<void> {
    await this.repo.insert(row);
  }

  findByHash(tokenHash: string): Promise<RefreshTokenEntity | null> {
    return this.repo.findOne({ where: { tokenHash } });
  }

  /** Marks the token used if it is neither used nor revoked; whether it was. */
  async claim(id: string): Promise<boolean> {
    const claimed = await this.repo
      .createQueryBuilder()
      .update()
      .set({ usedAt: () => 'now()' })
      .where('id = :id AND used_at IS NULL AND revoked_at IS NULL', { id })
      .execute();
    return !!claimed.affected;
  }

  async revokeFamily(familyId: string): Promise<void> {
    await this.repo.update({ familyId, revokedAt: IsNull() }, { revokedAt: () => 'now()' });
  }

  /** Deletes up to `take` tokens that expired before `cutoff`, the longest expired first (deleteExpiredRows); how many. */
  deleteExpiredBefore(cutoff: Date, take: number): Promise<number> {
    return deleteExpiredRows(this.txHost.tx, 'oauth_refresh_tokens', 'id', cutoff, take);
  }
}
