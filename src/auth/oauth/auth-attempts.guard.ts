import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard, type ThrottlerLimitDetail } from '@nestjs/throttler';
import type { Request } from 'express';
import { ApiException } from '../../common/errors/api-exception';
import { ErrorCode } from '../../common/errors/error-code';
import { basicClientId } from './client-credentials';

/**
 * Brute-force protection of the login form and the invite join form (and, through
 * TokenAttemptsGuard, the token endpoint): RATE_LIMIT_AUTH_PER_MINUTE attempts per client and
 * address (each endpoint counted apart), then 429 `threshold_exceeded` with `Retry-After`.
 *
 * The address is the library's: an IPv6 client counts by its /64, which one host can fill with
 * addresses of its own. The client is the form's `client_id` (the login form refuses an unknown one
 * before it checks any password; the join form has none). An `Authorization` header counts only
 * where it authenticates the client (the token endpoint): elsewhere anyone may send any, and one
 * fresh each time would buy a fresh budget each time.
 */
@Injectable()
export class AuthAttemptsGuard extends ThrottlerGuard {
  protected override async getTracker(req: Record<string, unknown>): Promise<string> {
    const request = req as unknown as Request;
    const address = request.ip ? await super.getTracker(req) : (request.socket.remoteAddress ?? '-');
    return `${address}|${this.clientOf(request) ?? '-'}`;
  }

  /** The client the attempt is made for. */
  protected clientOf(request: Request): string | undefined {
    const body = (request.body ?? {}) as Record<string, unknown>;
    return typeof body.client_id === 'string' ? body.client_id : undefined;
  }

  protected override throwThrottlingException(_context: ExecutionContext, limit: ThrottlerLimitDetail): Promise<void> {
    const retryAfter = Math.max(1, Math.ceil(limit.timeToBlockExpire));
    throw new ApiException(ErrorCode.ThresholdExceeded, `Too many attempts; retry in ${retryAfter} s`, {
      headers: { 'Retry-After': String(retryAfter), 'Cache-Control': 'no-store' },
    });
  }
}

/** The token endpoint's attempts: the client is the one its credentials name, by Basic or by form. */
@Injectable()
export class TokenAttemptsGuard extends AuthAttemptsGuard {
  protected override clientOf(request: Request): string | undefined {
    return basicClientId(request.headers.authorization) ?? super.clientOf(request);
  }
}
