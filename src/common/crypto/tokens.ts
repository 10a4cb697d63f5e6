import { createHash, randomBytes } from 'node:crypto';

/** A URL-safe random secret (codes, refresh tokens, client secrets, passwords). */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** Lookup hash for high-entropy secrets (codes, tokens): SHA-256 is enough, they cannot be guessed. */
export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}
