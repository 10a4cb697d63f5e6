import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { randomToken, sha256 } from '../../common/crypto/tokens';
import { AppConfig } from '../../config/app-config';
import { MetadataTransactions } from '../../database/metadata-transactions';
import { lockForContextTransaction } from '../../database/transaction-lock';
import { Reconciler } from '../../queues/reconciler';
import { RefreshTokensRepository } from './refresh-tokens.repository';
import { pruneInBatches } from '../../database/prune-in-batches';
import { pruneCutoff } from './expired-grants';
import { isSubsetOf } from './scopes';

export interface RefreshGrant {
  familyId: string;
  clientId: string;
  developerId: string;
  scope: string;
}

export type RotationResult =
  | { status: 'rotated'; grant: RefreshGrant; refreshToken: string }
  | { status: 'rejected'; reason: string }
  | { status: 'wider_scope' };

/**
 * Opaque refresh tokens (only SHA-256 hashes are stored), rotated on every use. A token used
 * twice means it leaked: the whole family, the legitimate holder's current token included, is revoked.
 * A rotation and a revocation of the same family take turns (an advisory lock on the family), so a
 * revocation also reaches the successor of a rotation that was under way when it came.
 * Every rotation adds a row and keeps the used one: the reconciler deletes those expired long enough.
 */
@Injectable()
export class RefreshTokensService implements OnModuleInit {
  private readonly logger = new Logger(RefreshTokensService.name);

  constructor(
    private readonly tokens: RefreshTokensRepository,
    private readonly txHost: MetadataTransactions,
    private readonly config: AppConfig,
    private readonly reconciler: Reconciler,
  ) {}

  onModuleInit(): void {
    this.reconciler.register('oauth-refresh-tokens-pruning', () => this.pruneExpired());
  }

  /** Stores a new token of the grant (in the transaction the context carries, if any) and returns it. */
  async issue(grant: RefreshGrant): Promise<string> {
    const token = randomToken(32);
    await this.tokens.insert({
      tokenHash: sha256(token),
      ...grant,
      expiresAt: new Date(Date.now() + this.config.env.REFRESH_TOKEN_TTL_SECONDS * 1000),
      usedAt: null,
      revokedAt: null,
    });
    return token;
  }

  /**
   * Exchanges a refresh token presented by `clientId` for its successor in the same family. With
   * `narrowTo`, a scope wider than the grant's is refused before the token is used, so the client
   * keeps it. `admit` checks the grant in the exchange's transaction before the token is used: what
   * it throws (the developer gone, the metadata database failing) leaves the token unused, so the
   * retry a 503 asks for is not taken for a reuse that revokes the family.
   */
  async rotate(
    token: string,
    clientId: string,
    narrowTo: string | undefined,
    admit: (grant: RefreshGrant) => Promise<void>,
  ): Promise<RotationResult> {
    const current = await this.tokens.findByHash(sha256(token));
    if (!current) return { status: 'rejected', reason: 'Unknown refresh token' };
    if (current.clientId !== clientId)
      return { status: 'rejected', reason: 'The refresh token was issued to another client' };
    if (current.revokedAt) return { status: 'rejected', reason: 'The refresh token has been revoked' };
    if (current.usedAt) return this.reused(current.familyId);
    if (current.expiresAt.getTime() <= Date.now())
      return { status: 'rejected', reason: 'The refresh token has expired' };
    if (narrowTo !== undefined && !isSubsetOf(narrowTo, current.scope)) return { status: 'wider_scope' };

    const grant: RefreshGrant = {
      familyId: current.familyId,
      clientId: current.clientId,
      developerId: current.developerId,
      scope: current.scope,
    };
    const successor = await this.txHost.withTransaction(async () => {
      await this.lockFamily(current.familyId);
      await admit(grant);
      // Only one of two concurrent rotations can claim the token; the other is a reuse.
      return (await this.tokens.claim(current.id)) ? this.issue(grant) : null;
    });
    if (!successor) return this.reused(current.familyId);
    return { status: 'rotated', grant, refreshToken: successor };
  }

  async revokeFamily(familyId: string): Promise<void> {
    await this.txHost.withTransaction(async () => {
      // Taken before the UPDATE starts, so its snapshot holds a successor whose rotation was under way.
      await this.lockFamily(familyId);
      await this.tokens.revokeFamily(familyId);
    });
  }

  /**
   * Deletes the tokens that expired more than OAUTH_EXPIRED_RETENTION_DAYS ago, a batch at a time
   * (pruneInBatches: a backlog takes several passes); how many it deleted. An expired token is refused anyway; until it is deleted, a used one
   * presented again still revokes its family (rotate checks use before expiry), afterwards it is
   * refused as unknown and its family, whose live token is a later row, is left alone.
   */
  async pruneExpired(now = new Date()): Promise<number> {
    const cutoff = pruneCutoff(now, this.config.env.OAUTH_EXPIRED_RETENTION_DAYS);
    const deleted = await pruneInBatches((take) => this.tokens.deleteExpiredBefore(cutoff, take));
    if (deleted > 0) this.logger.log({ deleted }, 'expired refresh tokens pruned');
    return deleted;
  }

  private lockFamily(familyId: string): Promise<void> {
    return lockForContextTransaction(this.txHost, `refresh-family:${familyId}`);
  }

  private async reused(familyId: string): Promise<RotationResult> {
    await this.revokeFamily(familyId);
    return { status: 'rejected', reason: 'The refresh token was already used; its family has been revoked' };
  }
}
