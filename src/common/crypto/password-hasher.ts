import { randomBytes, scrypt, ScryptOptions, timingSafeEqual } from 'node:crypto';

/**
 * OWASP's minimum for scrypt (Password Storage Cheat Sheet): N=2^17, r=8, p=1. scrypt needs
 * 128 * N * r bytes, 128 MiB here; `maxmem` leaves room above that, since Node refuses a hash whose
 * need reaches it.
 */
export const SCRYPT_PARAMS = { N: 2 ** 17, r: 8, p: 1, keyLength: 64 } as const;

function maxmemFor(N: number, r: number): number {
  return 128 * N * r + 16 * 1024 * 1024;
}

function scryptAsync(secret: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(secret, salt, keyLength, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

interface StoredHash {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  key: Buffer;
}

/** `scrypt$N$r$p$salt$key`, or null when the text is not such a hash (or names absurd parameters). */
function parse(stored: string | null | undefined): StoredHash | null {
  const parts = (stored ?? '').split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return null;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  if (![N, r, p].every(Number.isSafeInteger) || N < 2 || N > 2 ** 20 || r < 1 || r > 32 || p < 1 || p > 16) return null;
  return { N, r, p, salt: Buffer.from(parts[4], 'base64'), key: Buffer.from(parts[5], 'base64') };
}

/** Memory-hard hashing (scrypt) for developer passwords and OAuth client secrets. */
export async function hashSecret(secret: string): Promise<string> {
  const { N, r, p, keyLength } = SCRYPT_PARAMS;
  const salt = randomBytes(16);
  const key = await scryptAsync(secret, salt, keyLength, { N, r, p, maxmem: maxmemFor(N, r) });
  return ['scrypt', N, r, p, salt.toString('base64'), key.toString('base64')].join('$');
}

/** Whether `secret` matches the stored hash, computed with the parameters the hash was made with. */
export async function verifySecret(secret: string, stored: string | null | undefined): Promise<boolean> {
  const hash = parse(stored);
  if (!hash || !hash.key.length) return false;
  const actual = await scryptAsync(secret, hash.salt, hash.key.length, {
    N: hash.N,
    r: hash.r,
    p: hash.p,
    maxmem: maxmemFor(hash.N, hash.r),
  });
  return timingSafeEqual(actual, hash.key);
}

/** Whether a stored hash was made with weaker parameters than today's, so a successful login should rehash it. */
export function needsRehash(stored: string | null | undefined): boolean {
  const hash = parse(stored);
  if (!hash) return false;
  return hash.N < SCRYPT_PARAMS.N || hash.r < SCRYPT_PARAMS.r || hash.p < SCRYPT_PARAMS.p;
}
