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

  it('requires the signing and encryption secrets in production', () => {
    const problems = problemsOf({ NODE_ENV: 'production' });
    expect(problems).toEqual([
      'JWT_PRIVATE_KEY: required when NODE_ENV=production',
      'CREDENTIAL_ENCRYPTION_KEYS: required when NODE_ENV=production',
    ]);
  });
});
