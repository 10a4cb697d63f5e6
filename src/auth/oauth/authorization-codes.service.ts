import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { randomToken, sha256 } from '../../common/crypto/tokens';
import { AppConfig } from '../../config/app-config';
import { Reconciler } from '../../queues/reconciler';
import { AuthorizationCodesRepository } from './authorization-codes.repository';
import { pruneInBatches } from '../../database/prune-in-batches';
import { pruneCutoff } from './expired-grants';
import { s256Challenge, verifierMatchesChallenge } from './pkce';

export interface CodeGrant {
  clientId: string;
  developerId: string;
  redirectUri: string;
  codeChallenge: string | null;
  scope: string;
}

export type RedeemedCode =
  | { status: 'redeemed'; grant: CodeGrant; expired: boolean; familyId: string }
  /** Presented a second time by its client: the tokens it bought are revoked (RFC 6749 §4.1.2). */
  | { status: 'reused'; familyId: string }
  /** Presented by another client than its own (a leaked code): neither spent nor revoking anything. */
  | { status: 'foreign' }
  /** Presented without the verifier its challenge asks for (`missing` or not matching): neither spent nor revoking anything. */
  | { status: 'unverified'; missing: boolean }
  | { status: 'unknown' };

/**
 * The refresh-token family a code starts is derived from the code, so that presenting the code
 * again can revoke every token it led to without storing anything more.
 */
export function refreshFamilyOfCode(codeHash: string): string {
  const h = sha256(`refresh-family:${codeHash}`);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/**
 * Single-use authorization codes, bound to client, redirect URI and PKCE challenge; only hashes are
 * stored. The reconciler deletes those expired long enough.
 */
@Injectable()
export class AuthorizationCodesService implements OnModuleInit {
  private readonly logger = new Logger(AuthorizationCodesService.name);

  constructor(
    private readonly codes: AuthorizationCodesRepository,
    private readonly config: AppConfig,
    private readonly reconciler: Reconciler,
  ) {}

  onModuleInit(): void {
    this.reconciler.register('oauth-authorization-codes-pruning', () => this.pruneExpired());
  }

  /** Stores a new code and returns it (the only time it exists in clear). */
  async issue(grant: CodeGrant): Promise<string> {
    const code = randomToken(32);
    await this.codes.insert({
      codeHash: sha256(code),
      ...grant,
      expiresAt: new Date(Date.now() + this.config.env.AUTHORIZATION_CODE_TTL_SECONDS * 1000),
      consumedAt: null,
    });
    return code;
  }

  /**
   * Consumes the code atomically, for its own client only (RFC 6749 §4.1.3: the code is bound to
   * the client it was issued to): whatever the outcome of the checks that follow, it cannot be
   * redeemed again, and a concurrent second redemption sees it as reused. Inside the transaction
   * the context carries, the row stays locked until it commits, so a concurrent second redemption
   * waits and sees whatever the first one issued. Another client presenting it (anyone can present
   * a code as a public client, which has no secret), or its client without the PKCE verifier its
   * challenge asks for (RFC 7636 §4.6), neither spends it nor has what it granted revoked: without
   * the verifier a code is nothing, and whoever saw it (it travels in a redirect) could otherwise
   * block the sign-in it was for or end the session it started.
   */
  async redeem(code: string, clientId: string, verifier: string | undefined): Promise<RedeemedCode> {
    const codeHash = sha256(code);
    const row = await this.codes.consume(codeHash, clientId, verifier ? s256Challenge(verifier) : null);
    if (!row) {
      const issued = await this.codes.findIssued(codeHash);
      if (!issued) return { status: 'unknown' };
      if (issued.clientId !== clientId) return { status: 'foreign' };
      if (issued.codeChallenge && !(verifier && verifierMatchesChallenge(verifier, issued.codeChallenge))) {
        return { status: 'unverified', missing: !verifier };
      }
      return { status: 'reused', familyId: refreshFamilyOfCode(codeHash) };
    }
    return {
      status: 'redeemed',
      familyId: refreshFamilyOfCode(codeHash),
      expired: new Date(row.expires_at).getTime() <= Date.now(),
      grant: {
        clientId: row.client_id,
        developerId: row.developer_id,
        redirectUri: row.redirect_uri,
        codeChallenge: row.code_challenge,
        scope: row.scope,
      },
    };
  }

  /**
   * Deletes the codes that expired more than OAUTH_EXPIRED_RETENTION_DAYS (at least a day) ago, in
   * batches as RefreshTokensService.pruneExpired does; how many it deleted. Until then a replayed code
   * still revokes the family it started (redeem answers `reused`); afterwards it is refused as
   * unknown, its family left alone.
   */
  async pruneExpired(now = new Date()): Promise<number> {
    const cutoff = pruneCutoff(now, this.config.env.OAUTH_EXPIRED_RETENTION_DAYS);
    const deleted = await pruneInBatches((take) => this.codes.deleteExpiredBefore(cutoff, take));
    if (deleted > 0) this.logger.log({ deleted }, 'expired authorization codes pruned');
    return deleted;
  }
}
