/** Seconds a client is asked to wait (Retry-After) when a dependency is out. */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

/** Socket-level failures of any client (pg, ioredis, nodemailer): the server could not be reached or the connection broke. */
export const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * SQLSTATEs that say the server, not the request, is the problem: connection exceptions (class
 * 08), insufficient resources (53), operator intervention (57P01-57P05: shut down, crash recovery,
 * cannot connect now), a database not accepting connections (55000), a lock not had within
 * `lock_timeout` (55P03: held elsewhere for longer than DATABASE_LOCK_TIMEOUT_MS) and a write refused
 * by a read-only server (25006: a standby, or read-only by default; the only read-only transaction of
 * ours, the telemetry's on the data plane, writes nothing). A FATAL error ends the
 * session before any statement ran, so it says nothing about the request either.
 */
function isUnavailableSqlState(code: string, severity: unknown): boolean {
  // SQLSTATEs are five characters; other libraries' codes (e.g. 'ERR_…') are longer.
  if (code.length !== 5) return false;
  return (
    code.startsWith('08') ||
    code.startsWith('53') ||
    code.startsWith('57P') ||
    code === '55000' ||
    code === '55P03' ||
    code === '25006' ||
    severity === 'FATAL'
  );
}

/** pg's words for a connection cut or timed out before the server said anything (not an error it sent). */
const CONNECTION_CUT = /^Connection terminated( unexpectedly| due to connection timeout)?$/;

/** Messages of pg, pg-pool and ioredis for a connection that could not be had or was lost. */
const UNAVAILABLE_MESSAGES = [
  CONNECTION_CUT,
  /^(timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable)$/,
  /^Connection is closed\.?$/,
  /^Reached the max retries per request limit/,
  /^Stream isn't writeable/,
];

/**
 * Whether a connection got no answer at all: a socket-level failure (NETWORK_ERROR_CODES) or one cut
 * or timed out before the server said anything, as against an error the server sent (a refused
 * login, a TLS handshake refused).
 */
export function isConnectionFailure(err: unknown): boolean {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  return (
    (typeof code === 'string' && NETWORK_ERROR_CODES.has(code)) ||
    (typeof message === 'string' && CONNECTION_CUT.test(message))
  );
}

/**
 * Whether an error means a dependency (the metadata PostgreSQL, Redis) is unavailable rather
 * than that the request was wrong: such a request is answered 503 with Retry-After, never 4xx
 * (the client would throw away a good token or request) and never 500. Looks through wrappers
 * (TypeORM's `driverError`, `cause`).
 */
export function isDependencyOutage(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const { code, severity, message, name } = e as {
      code?: unknown;
      severity?: unknown;
      message?: unknown;
      name?: unknown;
    };
    if (typeof code === 'string' && (NETWORK_ERROR_CODES.has(code) || isUnavailableSqlState(code, severity)))
      return true;
    if (typeof message === 'string' && UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(message))) return true;
    if (name === 'MaxRetriesPerRequestError') return true;
    e = (e as { driverError?: unknown }).driverError ?? (e as { cause?: unknown }).cause;
  }
  return false;
}
