import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppConfig } from './app-config';
import { InvalidEnvironmentError, validateEnvironment } from './environment';
import { ALL_REGIONS } from './regions';

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

  it('takes a Redis database number as REDIS_URL’s path, and nothing else there', () => {
    for (const good of [
      'redis://127.0.0.1:6379',
      'redis://127.0.0.1:6379/',
      'redis://127.0.0.1:6379/3',
      'rediss://r.example/15',
    ]) {
      expect(problemsOf({ REDIS_URL: good })).toEqual([]);
    }
    for (const bad of ['redis://127.0.0.1:6379/abc', 'redis://127.0.0.1:6379/1/2', 'redis://127.0.0.1:6379/-1']) {
      expect(problemsOf({ REDIS_URL: bad })).toEqual([
        'REDIS_URL: its path, if any, must be a database number (e.g. redis://127.0.0.1:6379/0)',
      ]);
    }
  });

  it('refuses a PUBLIC_URL with a query or a fragment (the OAuth issuer, and the base of the links it sends)', () => {
    expect(problemsOf({ PUBLIC_URL: 'https://cp.example/base' })).toEqual([]);
    for (const bad of [
      'http://localhost:3000?x=1',
      'http://localhost:3000/#f',
      'http://localhost:3000?',
      'http://localhost:3000/#',
    ]) {
      expect(problemsOf({ PUBLIC_URL: bad }).map((p) => p.split(':')[0])).toEqual(['PUBLIC_URL']);
    }
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

describe('a setting of only whitespace', () => {
  it('is refused, text settings included (an operator password of spaces would work otherwise)', () => {
    for (const name of ['OPERATOR_PASSWORD', 'QUEUE_PREFIX', 'JWT_AUDIENCE', 'MAIL_FROM', 'SECRETS_FILE', 'PORT']) {
      const problems = problemsOf({ [name]: ' '.repeat(13) });
      expect(problems).toHaveLength(1);
      expect(problems[0].startsWith(`${name}: `)).toBe(true);
    }
    expect(problemsOf({ QUEUE_PREFIX: '' })).toEqual([]);
  });
});

describe('AppConfig as JSON (should anything log or print it)', () => {
  it('shows no secret: keys, the operator password and the passwords in every URL are left out', () => {
    const json = JSON.stringify(
      AppConfig.fromEnvironment({
        DATABASE_URL: 'postgres://control:metadata-pass@db:5432/control_plane',
        REDIS_URL: 'redis://:redis-pass@redis:6379',
        SMTP_URL: 'smtp://mailer:smtp-pass@mail:587',
        DATA_PLANE_URL: 'postgres://admin:data-plane-pass@dp:5432/postgres',
        DATA_PLANE_URL_AWS_EU_CENTRAL_1: 'postgres://admin@dp-eu:5432/postgres?password=eu-pass&sslmode=require',
        OPERATOR_PASSWORD: 'operator-pass',
      }),
    );
    for (const secret of ['metadata-pass', 'redis-pass', 'smtp-pass', 'data-plane-pass', 'eu-pass', 'operator-pass'])
      expect(json).not.toContain(secret);
    // What is not secret stays, to tell which servers a process was given.
    expect(json).toContain('postgres://control:***@db:5432/control_plane');
    expect(json).toContain('"PUBLIC_URL":"http://localhost:3000"');
    expect(json).toContain('sslmode=require');
    expect(json).not.toContain('PRIVATE KEY');
  });
});

describe('environment validation of values customers or the database would trip on', () => {
  const named = (raw: Record<string, string>) => problemsOf(raw).map((p) => p.split(':')[0]);

  it('refuses a DATA_PLANE_PUBLIC_HOST that is not HOST[:PORT] or [IPv6][:PORT] (it becomes dbHost)', () => {
    expect(named({ DATA_PLANE_PUBLIC_HOST: 'postgres://db.example.com:notaport' })).toEqual(['DATA_PLANE_PUBLIC_HOST']);
    expect(named({ DATA_PLANE_PUBLIC_HOST: 'db.example.com:99999' })).toEqual(['DATA_PLANE_PUBLIC_HOST']);
    expect(named({ DATA_PLANE_PUBLIC_HOST: ' ' })).toEqual(['DATA_PLANE_PUBLIC_HOST']);
    for (const good of ['db.example.com', 'db.example.com:6432', '[2001:db8::1]:5432', 'data_plane:5432'])
      expect(validateEnvironment({ DATA_PLANE_PUBLIC_HOST: good }).DATA_PLANE_PUBLIC_HOST).toBe(good);
  });

  it('refuses a bad DATA_PLANE_PUBLIC_HOST_<REGION> for every region (read by a name built from the region)', () => {
    for (const region of ALL_REGIONS) {
      const name = `DATA_PLANE_PUBLIC_HOST_${region}`;
      expect(problemsOf({ [name]: 'postgres://db.example.com:notaport' })).toEqual([
        `${name}: ${name} must be HOST or HOST:PORT ([IPv6] or [IPv6]:PORT, port 1-65535), not a URL`,
      ]);
      expect(validateEnvironment({ [name]: 'eu.db.example.com:5432' })).toMatchObject({
        [name]: 'eu.db.example.com:5432',
      });
    }
  });

  it('bounds DATA_PLANE_MAX_DATABASES by its int4 column', () => {
    expect(validateEnvironment({ DATA_PLANE_MAX_DATABASES: '2147483647' }).DATA_PLANE_MAX_DATABASES).toBe(2147483647);
    expect(problemsOf({ DATA_PLANE_MAX_DATABASES: '3000000000' })).toEqual([
      'DATA_PLANE_MAX_DATABASES: DATA_PLANE_MAX_DATABASES must not be greater than 2147483647',
    ]);
  });

  it('accepts URL hosts with underscores (Docker Compose service names) in every URL variable', () => {
    const env = validateEnvironment({
      DATABASE_URL: 'postgres://postgres:pw@control_db:5432/control_plane',
      REDIS_URL: 'redis://redis_cache:6379',
      SMTP_URL: 'smtp://mail_relay:25',
      DATA_PLANE_URL: 'postgres://postgres@data_plane:5432/postgres',
      DATA_PLANE_URL_AWS_EU_CENTRAL_1: 'postgres://postgres@data_plane_eu:5432/postgres',
      PUBLIC_URL: 'http://control_plane:3000',
    });
    expect(env.DATABASE_URL).toBe('postgres://postgres:pw@control_db:5432/control_plane');
    expect(env.REDIS_URL).toBe('redis://redis_cache:6379');
    expect(env.SMTP_URL).toBe('smtp://mail_relay:25');
    // Still a URL of the right kind.
    expect(named({ REDIS_URL: 'http://redis_cache:6379', DATABASE_URL: 'control_db:5432' }).sort()).toEqual([
      'DATABASE_URL',
      'REDIS_URL',
    ]);
  });

  it('bounds every TTL and grace period at 10 years, keeping the defaults valid', () => {
    const tenYears = 10 * 365 * 86400;
    const durations = [
      'REFRESH_TOKEN_TTL_SECONDS',
      'INVITE_TTL_SECONDS',
      'INSTANT_DATABASE_CLAIM_TTL_SECONDS',
      'DATABASE_DELETION_GRACE_SECONDS',
    ];
    for (const name of durations) {
      expect(validateEnvironment({ [name]: String(tenYears) })).toMatchObject({ [name]: tenYears });
      expect(problemsOf({ [name]: '10000000000000' })).toEqual([
        `${name}: ${name} must not be greater than ${tenYears}`,
      ]);
      expect(named({ [name]: String(tenYears + 1) })).toEqual([name]);
    }
  });

  it('bounds the job backoff at an hour and the billing re-rating interval at 31 days', () => {
    expect(validateEnvironment({ JOB_BACKOFF_MS: '3600000' }).JOB_BACKOFF_MS).toBe(3600000);
    expect(named({ JOB_BACKOFF_MS: '3600001' })).toEqual(['JOB_BACKOFF_MS']);
    expect(validateEnvironment({ BILLING_RATING_INTERVAL_SECONDS: '2678400' }).BILLING_RATING_INTERVAL_SECONDS).toBe(
      2678400,
    );
    expect(named({ BILLING_RATING_INTERVAL_SECONDS: '2678401' })).toEqual(['BILLING_RATING_INTERVAL_SECONDS']);
  });

  it('reads integer variables only as decimal digits: blank is a problem, not 0, and hex is not read', () => {
    for (const bad of [' ', '\t', '0x50', '1e3', '0b1', '80abc'])
      expect({ bad, named: named({ PORT: bad, DATABASE_LOCK_TIMEOUT_MS: bad }).sort() }).toEqual({
        bad,
        named: ['DATABASE_LOCK_TIMEOUT_MS', 'PORT'],
      });
    expect(validateEnvironment({ PORT: ' 8080 ' }).PORT).toBe(8080);
    // Empty is unset, as it always was: the default applies.
    expect(validateEnvironment({ PORT: '', DATABASE_LOCK_TIMEOUT_MS: '' })).toMatchObject({
      PORT: 3000,
      DATABASE_LOCK_TIMEOUT_MS: 10000,
    });
  });

  it('reads prices and plan limits only as decimal numbers too (a blank price is not free)', () => {
    for (const bad of [' ', '0x19', '1e2'])
      expect({ bad, named: named({ PRO_MONTHLY_PRICE_USD: bad }) }).toEqual({ bad, named: ['PRO_MONTHLY_PRICE_USD'] });
    expect(validateEnvironment({ PRO_MONTHLY_PRICE_USD: ' 19.5 ' }).PRO_MONTHLY_PRICE_USD).toBe(19.5);
    expect(validateEnvironment({ STORAGE_PRICE_PER_GB_MONTH_USD: '.25' }).STORAGE_PRICE_PER_GB_MONTH_USD).toBe(0.25);
    expect(named({ PLAN_FREE_MAX_DATABASES: '0x10' })).toEqual(['PLAN_FREE_MAX_DATABASES']);
    expect(validateEnvironment({ PLAN_FREE_MAX_DATABASES: ' 7 ' }).PLAN_FREE_MAX_DATABASES).toBe(7);
  });
});
