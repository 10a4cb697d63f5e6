import { createHash, createHmac, pbkdf2, randomBytes } from 'node:crypto';

export const SCRAM_ITERATIONS = 4096;

function pbkdf2Async(password: string, salt: Buffer, iterations: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    pbkdf2(password, salt, iterations, 32, 'sha256', (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for a password (RFC 5802/7677, as pg_authid keeps it):
 * `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`. Handing PostgreSQL this instead of the
 * password means the plaintext never reaches the data-plane server (nor its statement log).
 * Passwords here are ASCII (see randomToken), so SASLprep leaves them unchanged.
 */
export async function scramSha256Verifier(
  password: string,
  salt: Buffer = randomBytes(16),
  iterations = SCRAM_ITERATIONS,
): Promise<string> {
  const salted = await pbkdf2Async(password, salt, iterations);
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}
