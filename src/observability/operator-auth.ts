import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
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
