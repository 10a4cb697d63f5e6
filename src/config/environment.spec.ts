import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppConfig } from './app-config';
import { InvalidEnvironmentError, validateEnvironment } from './environment';

function problemsOf(raw: Record<string, string>): string[] {
  try {
    validateEnvironment(raw);
    return [];
  } catch (err) {
    if (err instanceof InvalidEnvironmentError) return err.problems;
    throw err;
  }
}

describe('environment validation', () => {
  it('applies the documented defaults when nothing is set', () => {
    const env = validateEnvironment({});
    expect(env).toMatchObject({
      PORT: 3000,
      PUBLIC_URL: 'http://localhost:3000',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/control_plane',
      REDIS_URL: 'redis://127.0.0.1:6379',
      SMTP_URL: 'smtp://127.0.0.1:1025',
      DATA_PLANE_URL: 'postgres://postgres@127.0.0.1:5432/postgres',
      WORKERS: 'on',
      DATABASE_DELETION_GRACE_SECONDS: 86400,
    });
  });

  it('converts numbers and keeps per-region data-plane overrides', () => {
    const env = validateEnvironment({
      PORT: '8080',
      DATA_PLANE_URL_AWS_EU_CENTRAL_1: 'postgres://admin:pw@eu.example:5432/postgres',
    });
    expect(env.PORT).toBe(8080);
    expect(env.DATA_PLANE_URL_AWS_EU_CENTRAL_1).toBe('postgres://admin:pw@eu.example:5432/postgres');
  });

  it('names every invalid variable', () => {
    const problems = problemsOf({ PORT: 'eighty', REDIS_URL: 'http://nope', WORKERS: 'sometimes' });
    expect(problems.map((p) => p.split(':')[0]).sort()).toEqual(['PORT', 'REDIS_URL', 'WORKERS']);
  });

  it('keeps expired OAuth grants 7 days by default, and at least one day (a replayed code must still revoke)', () => {
    expect(validateEnvironment({}).OAUTH_EXPIRED_RETENTION_DAYS).toBe(7);
    expect(validateEnvironment({ OAUTH_EXPIRED_RETENTION_DAYS: '1' }).OAUTH_EXPIRED_RETENTION_DAYS).toBe(1);
    for (const bad of ['0', '-1', '1.5', 'week', '3651']) {
      expect(problemsOf({ OAUTH_EXPIRED_RETENTION_DAYS: bad }).map((p) => p.split(':')[0])).toEqual([
        'OAUTH_EXPIRED_RETENTION_DAYS',
      ]);
    }
  });

  it('limits invite e-mails to 50 per sender and 5 per recipient an hour by default, and to a whole number of at least 1', () => {
    const defaults = validateEnvironment({});
    expect([defaults.INVITES_PER_SENDER_PER_HOUR, defaults.INVITES_PER_RECIPIENT_PER_HOUR]).toEqual([50, 5]);
    const set = validateEnvironment({ INVITES_PER_SENDER_PER_HOUR: '200', INVITES_PER_RECIPIENT_PER_HOUR: '1' });
    expect([set.INVITES_PER_SENDER_PER_HOUR, set.INVITES_PER_RECIPIENT_PER_HOUR]).toEqual([200, 1]);
    for (const bad of ['0', '-1', '1.5', 'many']) {
      expect(
        problemsOf({ INVITES_PER_SENDER_PER_HOUR: bad, INVITES_PER_RECIPIENT_PER_HOUR: bad })
          .map((p) => p.split(':')[0])
          .sort(),
      ).toEqual(['INVITES_PER_RECIPIENT_PER_HOUR', 'INVITES_PER_SENDER_PER_HOUR']);
    }
  });

  it('limits the invite e-mails of the whole service to 1000 an hour by default, and to a whole number of at least 1', () => {
    expect(validateEnvironment({}).INVITES_PER_HOUR).toBe(1000);
    expect(validateEnvironment({ INVITES_PER_HOUR: '1' }).INVITES_PER_HOUR).toBe(1);
    for (const bad of ['0', '-1', '1.5', 'many']) {
      expect(problemsOf({ INVITES_PER_HOUR: bad }).map((p) => p.split(':')[0])).toEqual(['INVITES_PER_HOUR']);
    }
  });

  it('lets a workspace subscription history gain 20 rows a day by default, and at least 2 (its creation row and one change)', () => {
    expect(validateEnvironment({}).SUBSCRIPTION_CHANGES_PER_DAY).toBe(20);
    expect(validateEnvironment({ SUBSCRIPTION_CHANGES_PER_DAY: '2' }).SUBSCRIPTION_CHANGES_PER_DAY).toBe(2);
    for (const bad of ['1', '0', '2.5', 'many']) {
      expect(problemsOf({ SUBSCRIPTION_CHANGES_PER_DAY: bad }).map((p) => p.split(':')[0])).toEqual([
        'SUBSCRIPTION_CHANGES_PER_DAY',
      ]);
    }
  });

  it('takes the OAuth issuer from PUBLIC_URL when JWT_ISSUER is not set', () => {
    expect(validateEnvironment({ PUBLIC_URL: 'http://127.0.0.1:3900' }).JWT_ISSUER).toBe('http://127.0.0.1:3900');
    expect(validateEnvironment({ PUBLIC_URL: 'https://cp.example/' }).JWT_ISSUER).toBe('https://cp.example');
    expect(validateEnvironment({}).JWT_ISSUER).toBe('http://localhost:3000');
    expect(
      validateEnvironment({ PUBLIC_URL: 'https://cp.example', JWT_ISSUER: 'https://cp.example/' }).JWT_ISSUER,
    ).toBe('https://cp.example');
  });

  it('refuses a JWT_ISSUER that is not PUBLIC_URL (RFC 8414 clients would refuse discovery)', () => {
    const problems = problemsOf({ PUBLIC_URL: 'http://127.0.0.1:3900', JWT_ISSUER: 'http://localhost:3000' });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^JWT_ISSUER: must be PUBLIC_URL \(http:\/\/127\.0\.0\.1:3900\)/);
  });

  it('reads plan limits as a whole number or unlimited, and names anything else', () => {
    const env = validateEnvironment({ PLAN_FREE_MAX_DATABASES: '5', PLAN_PRO_MAX_DATABASES: 'Unlimited' });
    expect([env.PLAN_FREE_MAX_DATABASES, env.PLAN_PRO_MAX_DATABASES]).toEqual([5, 'unlimited']);
    expect(problemsOf({ PLAN_FREE_MAX_DATABASES: 'many', PLAN_PRO_MAX_CREDENTIALS_PER_DATABASE: '-1' })).toEqual([
      'PLAN_FREE_MAX_DATABASES: PLAN_FREE_MAX_DATABASES must be a whole number or unlimited; PLAN_FREE_MAX_DATABASES must not be less than 0',
      'PLAN_PRO_MAX_CREDENTIALS_PER_DATABASE: PLAN_PRO_MAX_CREDENTIALS_PER_DATABASE must not be less than 0',
    ]);
  });

  it('requires the signing and encryption secrets in production', () => {
    const problems = problemsOf({ NODE_ENV: 'production' });
    expect(problems).toEqual([
      'JWT_PRIVATE_KEY: required when NODE_ENV=production',
      'CREDENTIAL_ENCRYPTION_KEYS: required when NODE_ENV=production',
    ]);
  });
});

describe('environment validation of values that would fail later', () => {
  it('refuses a boolean it cannot read instead of taking it as false', () => {
    const problems = problemsOf({ DATA_PLANE_LOCK_SHARED_DATABASES: 'flase' });
    expect(problems.map((p) => p.split(':')[0])).toEqual(['DATA_PLANE_LOCK_SHARED_DATABASES']);
    expect(validateEnvironment({ DATA_PLANE_LOCK_SHARED_DATABASES: 'false' }).DATA_PLANE_LOCK_SHARED_DATABASES).toBe(
      false,
    );
    expect(validateEnvironment({ DATA_PLANE_LOCK_SHARED_DATABASES: 'Yes' }).DATA_PLANE_LOCK_SHARED_DATABASES).toBe(
      true,
    );
  });

  it('names a JWT_PRIVATE_KEY that is not an RSA private key of 2048 bits or more', () => {
    const garbage = problemsOf({ JWT_PRIVATE_KEY: 'x'.repeat(120) });
    expect(garbage.map((p) => p.split(':')[0])).toEqual(['JWT_PRIVATE_KEY']);
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' });
    expect(problemsOf({ JWT_PRIVATE_KEY: ec.toString() }).map((p) => p.split(':')[0])).toEqual(['JWT_PRIVATE_KEY']);
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    });
    expect(problemsOf({ JWT_PRIVATE_KEY: small.toString() })).toEqual([
      'JWT_PRIVATE_KEY: must be an RSA key of 2048 bits or more (RS256), not 1024',
    ]);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' });
    expect(problemsOf({ JWT_PRIVATE_KEY: rsa.toString() })).toEqual([]);
    // A PEM passed on one line with literal \n, as some orchestrators do.
    expect(problemsOf({ JWT_PRIVATE_KEY: rsa.toString().replace(/\n/g, '\\n') })).toEqual([]);
  });

  it('names CREDENTIAL_ENCRYPTION_KEYS that are not id:base64 of 32 bytes, or repeat an id', () => {
    const key = randomBytes(32).toString('base64');
    expect(problemsOf({ CREDENTIAL_ENCRYPTION_KEYS: 'k1:c2hvcnQga2V5' }).map((p) => p.split(':')[0])).toEqual([
      'CREDENTIAL_ENCRYPTION_KEYS',
    ]);
    expect(problemsOf({ CREDENTIAL_ENCRYPTION_KEYS: `k1:${key},k1:${key}` }).map((p) => p.split(':')[0])).toEqual([
      'CREDENTIAL_ENCRYPTION_KEYS',
    ]);
    expect(problemsOf({ CREDENTIAL_ENCRYPTION_KEYS: `k2:${key},k1:${key}` })).toEqual([]);
  });

  it('lists every problem at once, secrets included', () => {
    const problems = problemsOf({
      NODE_ENV: 'production',
      PORT: 'eighty',
      JWT_PRIVATE_KEY: 'x'.repeat(120),
      CREDENTIAL_ENCRYPTION_KEYS: 'k1:c2hvcnQga2V5',
    });
    expect(problems.map((p) => p.split(':')[0]).sort()).toEqual([
      'CREDENTIAL_ENCRYPTION_KEYS',
      'JWT_PRIVATE_KEY',
      'PORT',
    ]);
  });

  it('names a per-region override for a region that does not exist (a typo would be ignored)', () => {
    const problems = problemsOf({
      DATA_PLANE_URL_AWS_US_WEST2: 'postgres://u@h:5432/postgres',
      DATA_PLANE_PUBLIC_HOST_AWS_EU_CENTRAL1: 'db.example.com:5432',
    });
    expect(problems.map((p) => p.split(':')[0]).sort()).toEqual([
      'DATA_PLANE_PUBLIC_HOST_AWS_EU_CENTRAL1',
      'DATA_PLANE_URL_AWS_US_WEST2',
    ]);
    expect(problems).toContain(
      'DATA_PLANE_PUBLIC_HOST_AWS_EU_CENTRAL1: no such region; per-region overrides are DATA_PLANE_PUBLIC_HOST_AWS_US_WEST_2, DATA_PLANE_PUBLIC_HOST_AWS_EU_CENTRAL_1, DATA_PLANE_PUBLIC_HOST_AZURE_EASTUS',
    );
  });
});

describe('AppConfig.fromEnvironment', () => {
  it('names a development secrets file it cannot read, instead of crashing', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cp-secrets-')), 'secrets.json');
    writeFileSync(file, '{ not json');
    let problems: string[] = [];
    try {
      AppConfig.fromEnvironment({ SECRETS_FILE: file });
    } catch (err) {
      if (!(err instanceof InvalidEnvironmentError)) throw err;
      problems = err.problems;
    }
    expect(problems.map((p) => p.split(':')[0])).toEqual(['SECRETS_FILE']);
  });
});
