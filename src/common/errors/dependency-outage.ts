import { QueryFailedError } from 'typeorm';

/** Seconds a client is asked to wait (Retry-After) when a dependency is out. */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

/** Socket-level failures of any client (pg, ioredis, nodemailer). */
const NETWORK_CODES = new Set([
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
 * PostgreSQL SQLSTATEs that say the server, not the request, is the problem: connection exceptions
 * (class 08), insufficient resources (53), operator intervention (57P01-57P05: shut down, cannot
 * connect now, terminated) and a database not accepting connections (55000 at connect).
 */
function isUnavailableSqlState(code: string): boolean {
  return code.startsWith('08') || code.startsWith('53') || code.startsWith('57P') || code === '55000';
}

/** Messages of pg-pool and ioredis for a connection that could not be had or was lost. */
const UNAVAILABLE_MESSAGES = [
  /^Connection terminated/,
  /timeout exceeded when trying to connect/,
  /^Connection is closed/,
  /Reached the max retries per request limit/,
  /^Stream isn't writeable/,
  /Client has encountered a connection error and is not queryable/,
];

/**
 * Whether an error means a dependency (the metadata PostgreSQL, Redis) is unavailable rather
 * than that the request was wrong: such a request is answered 503 with Retry-After, never 4xx
 * (the client would throw away a good token or request) and never 500.
 */
export function isDependencyOutage(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const cause = err instanceof QueryFailedError ? (err.driverError as unknown) : err;
  const code = (cause as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code)) return true;
    // SQLSTATEs are five characters; other libraries' codes (e.g. 'ERR_…') are longer.
    if (code.length === 5 && isUnavailableSqlState(code)) return true;
  }
  const message = (cause as Error).message ?? '';
  if (UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(message))) return true;
  return (
    err.name === 'MaxRetriesPerRequestError' || (cause instanceof Error && cause.name === 'MaxRetriesPerRequestError')
  );
}
