import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard, type ThrottlerLimitDetail } from '@nestjs/throttler';
import type { Request } from 'express';
import { ApiException } from '../../common/errors/api-exception';
import { ErrorCode } from '../../common/errors/error-code';
import { basicClientId } from './client-credentials';

/**
 * Brute-force protection of the login form, the token endpoint and the invite join form:
 * RATE_LIMIT_AUTH_PER_MINUTE attempts per client and address (each endpoint counted apart), then
 * 429 `threshold_exceeded` with `Retry-After`.
 */
@Injectable()
export class AuthAttemptsGuard extends ThrottlerGuard {
  protected override getTracker(req: Record<string, unknown>): Promise<string> {
    const request = req as unknown as Request;
    const body = (request.body ?? {}) as Record<string, unknown>;
    const fromBody = typeof body.client_id === 'string' ? body.client_id : undefined;
    const clientId = basicClientId(request.headers.authorization) ?? fromBody ?? '-';
    return Promise.resolve(`${request.ip ?? request.socket.remoteAddress ?? '-'}|${clientId}`);
  }

  protected override throwThrottlingException(_context: ExecutionContext, limit: ThrottlerLimitDetail): Promise<void> {
    const retryAfter = Math.max(1, Math.ceil(limit.timeToBlockExpire));
    throw new ApiException(ErrorCode.ThresholdExceeded, `Too many attempts; retry in ${retryAfter} s`, {
      headers: { 'Retry-After': String(retryAfter), 'Cache-Control': 'no-store' },
    });
  }
}
