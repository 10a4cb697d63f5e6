import { isWellFormedS256Challenge, isWellFormedVerifier, s256Challenge, verifierMatchesChallenge } from './pkce';

describe('PKCE (RFC 7636, S256)', () => {
  it('computes the S256 challenge of the RFC 7636 appendix B example', () => {
    const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
    expect(s256Challenge(verifier)).toBe('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
    expect(verifierMatchesChallenge(verifier, 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM')).toBe(true);
    expect(verifierMatchesChallenge(`${verifier}x`, 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM')).toBe(false);
    expect(verifierMatchesChallenge(verifier, 'short')).toBe(false);
  });

  it('accepts verifiers of the unreserved characters, 32 to 128 long', () => {
    expect(isWellFormedVerifier('a'.repeat(43))).toBe(true);
    expect(isWellFormedVerifier('a'.repeat(128))).toBe(true);
    expect(isWellFormedVerifier('a'.repeat(40))).toBe(true); // what the Nile CLI may send
    expect(isWellFormedVerifier('a'.repeat(31))).toBe(false);
    expect(isWellFormedVerifier('a'.repeat(129))).toBe(false);
    expect(isWellFormedVerifier(`${'a'.repeat(42)}+`)).toBe(false);
  });

  it('accepts only base64url SHA-256 challenges', () => {
    expect(isWellFormedS256Challenge('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM')).toBe(true);
    expect(isWellFormedS256Challenge('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-c')).toBe(false);
    expect(isWellFormedS256Challenge('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw+cM')).toBe(false);
  });
});
