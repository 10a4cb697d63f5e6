import Redis, { RedisOptions } from 'ioredis';

/**
 * How long a connection being cut may stay half-closed before its socket is destroyed. ioredis arms
 * a timer for that (not unref'd) on every disconnect, also when the socket is already closed, as it
 * is while Redis is down; with its 2 s default, a process that had closed everything it opened
 * stayed alive that much longer (Jest's workers were force-exited for it).
 */
const DISCONNECT_TIMEOUT_MS = 200;
/** How long a ready connection's QUIT may take before the connection is cut. */
const QUIT_TIMEOUT_MS = 1000;

/**
 * Opens a Redis connection as the service does everywhere. Connection errors surface through the
 * commands that fail, `/health` and job retries, so they are not also thrown as 'error' events.
 */
export function openRedis(url: string, options: RedisOptions): Redis {
  const client = new Redis(url, { ...options, disconnectTimeout: DISCONNECT_TIMEOUT_MS });
  client.on('error', () => undefined);
  return client;
}

/**
 * Closes a connection without failing commands still in flight. A ready connection gets QUIT, which
 * Redis answers after the pending replies, and is closed when this resolves; one still open after a
 * moment is cut. One that is not ready (connecting, or waiting to reconnect while Redis is down) is
 * cut at once and makes no further attempt (ioredis may go on reporting it as 'reconnecting').
 */
export async function closeRedis(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  if (client.status === 'ready') {
    const ended = new Promise((resolve) => client.once('end', resolve));
    client.quit().catch(() => undefined);
    await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, QUIT_TIMEOUT_MS).unref())]);
  }
  // (the status may have changed while QUIT was under way)
  if ((client.status as string) !== 'end') client.disconnect();
}
