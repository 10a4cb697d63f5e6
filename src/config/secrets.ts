import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { EnvironmentVariables } from './environment';

export interface Secrets {
  jwtPrivateKeyPem: string;
  /** Ordered: the first key encrypts, every key may decrypt. */
  credentialKeys: { id: string; key: Buffer }[];
}

interface SecretsFile {
  jwtPrivateKeyPem: string;
  credentialEncryptionKeys: string;
}

export function parseCredentialKeys(spec: string): { id: string; key: Buffer }[] {
  return spec.split(',').map((part) => {
    const [id, b64] = part.trim().split(':');
    const key = Buffer.from(b64 ?? '', 'base64');
    if (!id || key.length !== 32) {
      throw new Error('CREDENTIAL_ENCRYPTION_KEYS: each entry must be id:base64 of 32 bytes');
    }
    return { id, key };
  });
}

/**
 * Secrets come from the environment (required in production). In development and tests they are
 * generated once and kept in SECRETS_FILE (mode 0600) so that `npm start` needs no set-up.
 */
export function resolveSecrets(env: EnvironmentVariables): Secrets {
  let fromFile: SecretsFile | undefined;
  if (!env.JWT_PRIVATE_KEY || !env.CREDENTIAL_ENCRYPTION_KEYS) fromFile = loadOrCreateSecretsFile(env.SECRETS_FILE);
  return {
    jwtPrivateKeyPem: (env.JWT_PRIVATE_KEY ?? fromFile!.jwtPrivateKeyPem).replace(/\\n/g, '\n'),
    credentialKeys: parseCredentialKeys(env.CREDENTIAL_ENCRYPTION_KEYS ?? fromFile!.credentialEncryptionKeys),
  };
}

function loadOrCreateSecretsFile(path: string): SecretsFile {
  if (existsSync(path)) return JSON.parse(readFileSync(path, 'utf8')) as SecretsFile;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const secrets: SecretsFile = {
    jwtPrivateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    credentialEncryptionKeys: `k1:${randomBytes(32).toString('base64')}`,
  };
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  // Written aside and linked into place, so concurrent first starts agree on one file.
  const pending = `${path}.${process.pid}.tmp`;
  writeFileSync(pending, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  try {
    linkSync(pending, path);
    return secrets;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return JSON.parse(readFileSync(path, 'utf8')) as SecretsFile;
  } finally {
    unlinkSync(pending);
  }
}
