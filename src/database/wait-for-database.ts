import { NETWORK_ERROR_CODES } from '../common/errors/dependency-outage';

/**
 * Errors that mean "the server is not there yet" (still starting, its name not resolvable yet, a
 * connection refused or cut), as opposed to a server that answered and refused us (wrong password,
 * a failed migration): only these are worth waiting out at boot.
 */
const UNREACHABLE_CODES = new Set([
  ...NETWORK_ERROR_CODES,
  '57P03', // cannot_connect_now: the server is starting up or shutting down
]);
const UNREACHABLE_MESSAGES = [/Connection terminated/i, /timeout expired/i, /timeout exceeded when trying to connect/i];

export function isUnreachable(err: unknown): boolean {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return true;
  // AggregateError (every address of a name refused) carries the codes in its errors.
  const inner = (err as { errors?: unknown[] } | null)?.errors;
  if (Array.isArray(inner) && inner.length && inner.every(isUnreachable)) return true;
  return typeof message === 'string' && UNREACHABLE_MESSAGES.some((m) => m.test(message));
}

export interface WaitOptions {
  /** How long to keep trying; 0 tries once. */
  waitMs: number;
  /** Which errors are worth another attempt; `isUnreachable` unless told. */
  retryOn?: (err: unknown) => boolean;
  onRetry?: (err: unknown, delayMs: number) => void;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

/**
 * Runs `attempt` until it succeeds, retrying (with backoff from 0.5 s to 5 s) only while the server
 * is unreachable (or `retryOn` says so) and only for `waitMs`; then the last error is thrown.
 */
export async function untilReachable<T>(attempt: () => Promise<T>, options: WaitOptions): Promise<T> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = options.now ?? Date.now;
  const retryOn = options.retryOn ?? isUnreachable;
  const deadline = now() + options.waitMs;
  let delay = 500;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      const left = deadline - now();
      if (!retryOn(err) || left <= 0) throw err;
      const wait = Math.min(delay, left);
      options.onRetry?.(err, wait);
      await sleep(wait);
      delay = Math.min(delay * 2, 5000);
    }
  }
}
