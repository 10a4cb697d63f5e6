import { randomBytes, scryptSync } from 'node:crypto';
import { hashSecret, needsRehash, SCRYPT_PARAMS, verifySecret } from './password-hasher';

/** A hash as the service made them before N was raised (2^14). */
function legacyHash(secret: string): string {
  const salt = randomBytes(16);
  const key = scryptSync(secret, salt, 64, { N: 2 ** 14, r: 8, p: 1 });
  return ['scrypt', 2 ** 14, 8, 1, salt.toString('base64'), key.toString('base64')].join('$');
}

describe('password hashing', () => {
  it('hashes with at least OWASP’s minimum scrypt parameters (N=2^17, r=8, p=1)', async () => {
    const stored = await hashSecret('correct horse battery');
    const [scheme, N, r, p] = stored.split('$');
    expect(scheme).toBe('scrypt');
    expect(Number(N)).toBeGreaterThanOrEqual(2 ** 17);
    expect(Number(r)).toBeGreaterThanOrEqual(8);
    expect(Number(p)).toBeGreaterThanOrEqual(1);
    expect(SCRYPT_PARAMS.N).toBe(2 ** 17);
    expect(await verifySecret('correct horse battery', stored)).toBe(true);
    expect(await verifySecret('wrong horse battery', stored)).toBe(false);
    expect(needsRehash(stored)).toBe(false);
  });

  it('still verifies a hash made with the older parameters, and says it needs rehashing', async () => {
    const stored = legacyHash('old password');
    expect(await verifySecret('old password', stored)).toBe(true);
    expect(await verifySecret('other password', stored)).toBe(false);
    expect(needsRehash(stored)).toBe(true);
  });

  it('refuses stored text that is no hash, or names absurd parameters, without computing anything', async () => {
    for (const stored of [
      null,
      '',
      'plain',
      'scrypt$1$8$1$AA==$AA==',
      'scrypt$1073741824$8$1$AA==$AA==',
      'scrypt$x$8$1$AA==$AA==',
    ]) {
      expect(await verifySecret('x', stored)).toBe(false);
      expect(needsRehash(stored)).toBe(false);
    }
  });
});
