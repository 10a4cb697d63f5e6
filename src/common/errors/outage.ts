/**
 * Whether an error means a dependency could not be reached or refused to serve (the metadata
 * PostgreSQL stopped, restarting, refusing connections, out of connection slots, a dropped
 * network), rather than anything about the request. Such a failure answers 503 with Retry-After:
 * the same request will work once the dependency is back.
 */
export function isDependencyOutage(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const { code, severity, message } = e as { code?: unknown; severity?: unknown; message?: unknown };
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || isUnavailableSqlState(code, severity))) return true;
    if (typeof message === 'string' && LOST_CONNECTION.test(message)) return true;
    // TypeORM wraps the driver's error (QueryFailedError.driverError); others use `cause`.
    e = (e as { driverError?: unknown }).driverError ?? (e as { cause?: unknown }).cause;
  }
  return false;
}

/** Seconds a client should wait before retrying after an outage answer. */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/**
 * SQLSTATEs of a server that cannot serve now: class 08 (connection exception), 53300 (too many
 * connections), 57P01-57P03 (shut down, crash recovery, cannot connect now). A FATAL error while
 * connecting (such as 55000 "database is not currently accepting connections") ends the session
 * before any statement ran, so it says nothing about the request either.
 */
function isUnavailableSqlState(code: string, severity: unknown): boolean {
  return code.startsWith('08') || ['53300', '57P01', '57P02', '57P03'].includes(code) || severity === 'FATAL';
}

/** pg and pg-pool's own errors for a connection lost or never made. */
const LOST_CONNECTION =
  /^(Connection terminated( unexpectedly| due to connection timeout)?|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable)$/;
