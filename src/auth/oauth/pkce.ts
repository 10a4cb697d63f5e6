import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * RFC 7636 asks for 43 to 128 characters. The published Nile CLI strips `+/=` from 32 random bytes
 * in base64, which gives 40 to 43 characters, so shorter verifiers are accepted down to 32
 * characters (still well over 128 bits of entropy).
 */
const VERIFIER = /^[A-Za-z0-9\-._~]{32,128}$/;
/** An S256 challenge is a base64url SHA-256: exactly 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

export function isWellFormedVerifier(verifier: string): boolean {
  return VERIFIER.test(verifier);
}

export function isWellFormedS256Challenge(challenge: string): boolean {
  return S256_CHALLENGE.test(challenge);
}

export function s256Challenge(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

export function verifierMatchesChallenge(verifier: string, challenge: string): boolean {
  const actual = Buffer.from(s256Challenge(verifier));
  const expected = Buffer.from(challenge);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
