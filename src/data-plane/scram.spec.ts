import { scramSha256Verifier } from './scram';

describe('scramSha256Verifier', () => {
  it('computes the verifier PostgreSQL 15 itself stored for the same password and salt', async () => {
    // Read from pg_authid after `CREATE ROLE … PASSWORD 'correct horse battery staple'` with scram-sha-256.
    const stored =
      'SCRAM-SHA-256$4096:AvmjJaQDE4/MFGSiAUB2kg==$43RTeWXMRX+ibLaaJ9nob6Mrr31bHVDyeUTuYelD/Go=:VYRI6LZ0nkmIJjLWAk2XCXGxI3N03nfnbd+5nWx0U/w=';
    const salt = Buffer.from('AvmjJaQDE4/MFGSiAUB2kg==', 'base64');
    await expect(scramSha256Verifier('correct horse battery staple', salt)).resolves.toBe(stored);
  });

  it('uses a fresh random salt each time and never contains the password', async () => {
    const a = await scramSha256Verifier('s3cret-password');
    const b = await scramSha256Verifier('s3cret-password');
    expect(a).toMatch(/^SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}:[A-Za-z0-9+/=]{44}$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('s3cret-password');
  });
});
