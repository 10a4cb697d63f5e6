import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import { ErrorCode } from '../common/errors/error-code';

export const OPERATOR_USER = 'operator';

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Whether an Authorization header carries the operator's basic credentials (compared in constant time). */
export function isOperator(authorization: string | undefined, password: string): boolean {
  const match = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(authorization ?? '');
  if (!match) return false;
  const given = Buffer.from(match[1], 'base64').toString('utf8');
  return timingSafeEqual(digest(given), digest(`${OPERATOR_USER}:${password}`));
}

/** Writes a JSON error body (the service's one shape) on a plain Node response. */
export function writeError(
  res: ServerResponse,
  status: number,
  errorCode: ErrorCode,
  message: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify({ errorCode, message, statusCode: status }));
}

/**
 * Guards an operator page (/metrics) with HTTP basic auth, user `operator`, password
 * OPERATOR_PASSWORD; a refusal is 401 with the error body and a Basic challenge.
 */
export function requireOperator(password: string) {
  return (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    if (isOperator(req.headers.authorization, password)) return next();
    writeError(res, 401, ErrorCode.InvalidCredentials, 'Operator credentials required', {
      'WWW-Authenticate': 'Basic realm="operator", charset="UTF-8"',
    });
  };
}

/** Plain Node middleware, for the API's Express routes and the worker's own HTTP server alike. */
export type NodeMiddleware = (
  req: IncomingMessage,
  res: ServerResponse,
  next: (err?: unknown) => void,
) => Promise<void>;

/**
 * Limits guessing at the operator's credentials (the queue dashboard, /metrics): `perMinute` wrong
 * attempts a minute per address (an IPv6 client by its /64, as the other auth limits count), then
 * every request from there is 429 `threshold_exceeded` with `Retry-After` until the minute is over,
 * before its credentials are looked at. Requests with the right credentials are not counted, so a
 * scraper is never limited. Counted in this process's memory (express-rate-limit's store): each
 * process has its own budget, which against a password of 12 characters or more is no matter.
 */
export function limitOperatorAttempts(perMinute: number): NodeMiddleware {
  const limiter = rateLimit({
    windowMs: 60_000,
    limit: perMinute,
    standardHeaders: false,
    legacyHeaders: false,
    skipSuccessfulRequests: true,
    requestWasSuccessful: (_req, res) => res.statusCode !== 401,
    // Express's address where there is one (it honours the trusted proxy), else the socket's.
    keyGenerator: (req) => ipKeyGenerator(req.ip ?? req.socket.remoteAddress ?? '-', 64),
    // The worker's server is plain Node: it has no req.ip for the library to check.
    validate: { ip: false },
    handler: (req, res) => {
      const reset = (req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
      const retryAfter = Math.max(1, Math.ceil(((reset?.getTime() ?? Date.now() + 60_000) - Date.now()) / 1000));
      writeError(
        res,
        429,
        ErrorCode.ThresholdExceeded,
        `Too many attempts at the operator credentials; retry in ${retryAfter} s`,
        { 'Retry-After': String(retryAfter), 'Cache-Control': 'no-store' },
      );
    },
  });
  return async (req, res, next) => {
    await limiter(req as Request, res as Response, next);
  };
}
