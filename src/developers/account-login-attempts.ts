import { Injectable } from '@nestjs/common';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { SecretBox } from '../common/crypto/secret-box';
import { RedisThrottlerStorage } from '../common/rate-limit/redis-throttler-storage';
import { AppConfig } from '../config/app-config';

const HOUR_MS = 3_600_000;
const THROTTLER = 'login-account';

/**
 * Password attempts per account, from any address (the per-address limit alone lets an attacker
 * with many addresses guess one account's password without end): RATE_LIMIT_LOGIN_PER_ACCOUNT_PER_HOUR
 * in a window opened by the first attempt, counted in Redis for every API process, and cleared by a
 * right password. Over it, 429 before any password is checked, whether or not the account exists.
 * The price is that such an attacker also keeps the account's owner out while the attack lasts.
 */
@Injectable()
export class AccountLoginAttempts {
  private readonly limit: number;

  constructor(
    config: AppConfig,
    private readonly storage: RedisThrottlerStorage,
    private readonly secrets: SecretBox,
  ) {
    this.limit = config.env.RATE_LIMIT_LOGIN_PER_ACCOUNT_PER_HOUR;
  }

  /** Counts an attempt at the password of `email` (normalized); 429 once the account's budget is spent. */
  async take(email: string): Promise<void> {
    if (!this.limit) return;
    const record = await this.storage.incrementAcross(this.keysOf(email), HOUR_MS, this.limit, HOUR_MS, THROTTLER);
    if (!record.isBlocked) return;
    const retryAfter = Math.max(1, record.timeToBlockExpire);
    throw new ApiException(
      ErrorCode.ThresholdExceeded,
      `Too many sign-in attempts for this account; retry in ${retryAfter} s`,
      { headers: { 'Retry-After': String(retryAfter), 'Cache-Control': 'no-store' } },
    );
  }

  /** The right password was given: the account's count starts again. */
  async clear(email: string): Promise<void> {
    if (this.limit) await this.storage.reset(this.keysOf(email), THROTTLER);
  }

  /**
   * The e-mail is not kept in Redis, only MACs of it under the service's keys: a plain digest would
   * tell anyone who reads Redis which of a list of addresses tried to sign in. An attempt is counted
   * under the first key of CREDENTIAL_ENCRYPTION_KEYS, against a budget that also counts those under
   * the others: a new first key does not start an account's count again, and a replica given it
   * before the others counts theirs too (they, without it, count only their own meanwhile).
   */
  private keysOf(email: string): string[] {
    return this.secrets.macs(THROTTLER, email);
  }
}
