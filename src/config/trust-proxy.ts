import { isIP } from 'node:net';

/** What Express's `trust proxy` takes: every hop, none, a number of hops, or the proxies' addresses. */
export type TrustProxy = boolean | number | string[];

const PRESETS = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** One entry of a list: a preset name, an address, or an address with its prefix length. */
function isProxyAddress(entry: string): boolean {
  if (PRESETS.has(entry)) return true;
  const [address, prefix, ...rest] = entry.split('/');
  const version = isIP(address);
  if (!version || rest.length) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128);
}

/**
 * TRUST_PROXY as Express takes it: `true` / `false`, a number of hops, or a comma-separated list of
 * proxies (`loopback`, `linklocal`, `uniquelocal`, addresses, CIDR ranges). Null when it is none of them.
 */
export function parseTrustProxy(value: string): TrustProxy | null {
  const v = value.trim();
  if (v === 'true' || v === 'false') return v === 'true';
  if (/^\d{1,3}$/.test(v)) return Number(v);
  const entries = v.split(',').map((e) => e.trim());
  return entries.length && entries.every(isProxyAddress) ? entries : null;
}
