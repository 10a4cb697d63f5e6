import { Injectable } from '@nestjs/common';
import type { Repository } from 'typeorm';
import { MetadataTransactions } from '../../database/metadata-transactions';
import { AuthorizationCodeEntity } from './authorization-code.entity';
import { deleteExpiredRows } from './expired-grants';

/** What consuming a code answers: its grant, as stored. */
export interface ConsumedCode {
  client_id: string;
  developer_id: string;
  redirect_uri: string;
  code_challenge: string | null;
  scope: string;
  expires_at: Date | string;
}

/**
 * Every statement on `authorization_codes` (habit 15). Statements go through the transaction the
 * context carries (MetadataTransactions): inside its withTransaction they join it, outside they run
 * on their own.
 */
@Injectable()
export class AuthorizationCodesRepository {
  constructor(private readonly txHost: MetadataTransactions) {}

  private get repo(): Repository<AuthorizationCodeEntity> {
    return this.txHost.tx.getRepository(AuthorizationCodeEntity);
  }

  async insert(row: Partial<AuthorizationCodeEntity>): Promise<void> {
    await this.repo.insert(row);
  }

  /**
   * Marks the code consumed if it was not, it is `clientId`'s and `challenge` (the S256 of the
   * verifier presented, null for none) is its code challenge, if it has one; answers its grant, or
   * undefined when there is no such unconsumed code. Inside a transaction, the row stays locked
   * until it ends.
   */
  async consume(codeHash: string, clientId: string, challenge: string | null): Promise<ConsumedCode | undefined> {
    const consumed = await this.repo
      .createQueryBuilder()
      .update()
      .set({ consumedAt: () => 'now()' })
      .where(
        'code_hash = :codeHash AND client_id = :clientId AND consumed_at IS NULL AND (code_challenge IS NULL OR code_challenge = :challenge)',
        { codeHash, clientId, challenge },
      )
      .returning('client_id, developer_id, redirect_uri, code_challenge, scope, expires_at')
      .execute();
    return (consumed.raw as ConsumedCode[])[0];
  }

  /** The client the code was issued to and its code challenge; undefined when there is no such code. */
  findIssued(codeHash: string): Promise<Pick<AuthorizationCodeEntity, 'clientId' | 'codeChallenge'> | null> {
    return this.repo.findOne({ select: { clientId: true, codeChallenge: true }, where: { codeHash } });
  }

  /** Deletes up to `take` codes that expired before `cutoff`, the longest expired first (deleteExpiredRows); how many. */
  deleteExpiredBefore(cutoff: Date, take: number): Promise<number> {
    return deleteExpiredRows(this.txHost.tx, 'oauth_authorization_codes', 'code_hash', cutoff, take);
  }
}
