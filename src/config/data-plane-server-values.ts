import { parseDecimalInteger } from './decimal-integer';

/**
 * The values a data-plane server is registered with, checked by one rule whether they come from the
 * environment (DATA_PLANE_PUBLIC_HOST[_<REGION>], DATA_PLANE_MAX_DATABASES) or from the operator
 * CLI (`--public-host`, `--max-databases`). No package imports: the CLI reads this before anything
 * else has loaded.
 */

/** `max_databases` is an `integer` (int4) column: a larger capacity cannot be saved. */
export const MAX_SERVER_DATABASES = 2_147_483_647;

/**
 * HOST or HOST:PORT, [IPv6] or [IPv6]:PORT: what customers are told to connect to (`dbHost` is
 * `postgres://<public host>/<database>`). Underscores are allowed: a Docker Compose service name
 * (`data_plane`) is a host customers on that network reach, as the admin URL's host may already be.
 */
const PUBLIC_HOST = /^(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?$/;

export const PUBLIC_HOST_FORMAT = 'HOST or HOST:PORT ([IPv6] or [IPv6]:PORT, port 1-65535), not a URL';

export function isPublicHost(host: string): boolean {
  const match = PUBLIC_HOST.exec(host);
  if (!match) return false;
  const port = match[1] === undefined ? undefined : Number(match[1]);
  return port === undefined || (port >= 1 && port <= 65535);
}

/** A server's capacity written in decimal, from 1 to MAX_SERVER_DATABASES; undefined for anything else. */
export function serverCapacityOf(text: string): number | undefined {
  const capacity = parseDecimalInteger(text);
  return capacity !== undefined && capacity >= 1 && capacity <= MAX_SERVER_DATABASES ? capacity : undefined;
}
