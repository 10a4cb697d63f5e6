import { ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Client } from 'pg';
import { verifySecret } from '../../src/common/crypto/password-hasher';
import { uniqueEmail } from '../support/test-app';
import { freePort } from '../support/free-port';
import { pkce, runCli } from './identity-support';

const root = join(__dirname, '..', '..');
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

/**
 * Runs the built API at the most verbose log level, drives every flow that handles a secret, and
 * checks that none of them reaches the log, a response that lists things, or the database in clear.
 */
describe('secrets stay secret (logs, responses, stored forms)', () => {
  let server: ChildProcess;
  let output = '';
  let baseUrl: string;
  let db: Client;

  const secrets: Record<string, string> = {};

  beforeAll(async () => {
    db = new Client({ connectionString: process.env.DATABASE_URL });
    await db.connect();
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    server = spawn(process.execPath, [join(root, 'dist/src/main.js')], {
      cwd: root,
      env: {
        ...process.env,
        PORT: String(port),
        PUBLIC_URL: baseUrl,
        JWT_ISSUER: baseUrl,
        LOG_LEVEL: 'trace',
        WORKERS: 'off',
        QUEUE_PREFIX: `secrets-${randomBytes(4).toString('hex')}`,
        RATE_LIMIT_AUTH_PER_MINUTE: '1000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    server.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const deadline = Date.now() + 30000;
    for (;;) {
      const ok = await fetch(`${baseUrl}/.well-known/jwks.json`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline || server.exitCode !== null) throw new Error(`the API did not start:\n${output}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  });

  afterAll(async () => {
    await db.end();
    if (server && server.exitCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
  });

  const form = (fields: Record<string, string>) => new URLSearchParams(fields);
  const token = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${baseUrl}/oauth2/token`, { method: 'POST', body: form(fields), headers });

  it('drives every flow that carries a secret', async () => {
    secrets.password = `pw-${randomBytes(12).toString('base64url')}`;
    secrets.wrongPassword = `wrong-${randomBytes(12).toString('base64url')}`;
    const email = uniqueEmail('secrets');
    const human = await runCli(['developer:create', '--email', email, '--password', secrets.password]);
    expect(human.code).toBe(0);
    const api = await runCli(['developer:create', '--email', uniqueEmail('secrets-api'), '--kind', 'API']);
    expect(api.code).toBe(0);
    secrets.clientSecret = api.json!.clientSecret as string;
    const clientId = api.json!.clientId as string;

    const { verifier, challenge } = pkce();
    secrets.codeVerifier = verifier;
    const params = {
      response_type: 'code',
      client_id: 'nilecli',
      redirect_uri: 'http://localhost:43210/callback',
      state: 'st',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    };
    expect((await fetch(`${baseUrl}/authorize?${form(params).toString()}`)).status).toBe(200);
    const wrong = await fetch(`${baseUrl}/authorize`, {
      method: 'POST',
      body: form({ ...params, email, password: secrets.wrongPassword }),
      redirect: 'manual',
    });
    expect(wrong.status).toBe(401);
    const login = await fetch(`${baseUrl}/authorize`, {
      method: 'POST',
      body: form({ ...params, email, password: secrets.password }),
      redirect: 'manual',
    });
    expect(login.status).toBe(302);
    secrets.code = new URL(login.headers.get('location')!).searchParams.get('code')!;

    const exchanged = await token({
      grant_type: 'authorization_code',
      code: secrets.code,
      redirect_uri: params.redirect_uri,
      client_id: 'nilecli',
      code_verifier: verifier,
    });
    expect(exchanged.status).toBe(200);
    const tokens = (await exchanged.json()) as { access_token: string; refresh_token: string };
    secrets.accessToken = tokens.access_token;
    secrets.refreshToken = tokens.refresh_token;
    const rotated = await token({
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: 'nilecli',
    });
    expect(rotated.status).toBe(200);
    secrets.rotatedRefreshToken = ((await rotated.json()) as { refresh_token: string }).refresh_token;
    expect(
      (await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: 'nilecli' })).status,
    ).toBe(400);

    // A replayed code fails (and revokes the refresh tokens it led to); the failure is logged, the code is not.
    expect(
      (
        await token({
          grant_type: 'authorization_code',
          code: secrets.code,
          redirect_uri: params.redirect_uri,
          client_id: 'nilecli',
          code_verifier: verifier,
        })
      ).status,
    ).toBe(400);

    const basic = `Basic ${Buffer.from(`${clientId}:${secrets.clientSecret}`).toString('base64')}`;
    secrets.basicHeader = basic.slice('Basic '.length);
    expect((await token({ grant_type: 'client_credentials' }, { Authorization: basic })).status).toBe(200);
    expect(
      (await token({ grant_type: 'client_credentials', client_id: clientId, client_secret: secrets.clientSecret }))
        .status,
    ).toBe(200);
    expect(
      (await token({ grant_type: 'client_credentials', client_id: clientId, client_secret: secrets.wrongPassword }))
        .status,
    ).toBe(401);

    const me = await fetch(`${baseUrl}/developers/me`, { headers: { Authorization: `Bearer ${tokens.access_token}` } });
    expect(me.status).toBe(200);
    const body = (await me.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['databases', 'email', 'id', 'kind', 'workspaces']);
  });

  it('never writes them to the log', async () => {
    // The log really is there and verbose: it records the token requests.
    await new Promise((r) => setTimeout(r, 300));
    expect(output).toContain('/oauth2/token');
    expect(output).toContain('/authorize');
    expect(Object.keys(secrets).length).toBeGreaterThanOrEqual(9);
    const leaked = Object.entries(secrets)
      .filter(([, value]) => output.includes(value))
      .map(([name]) => name);
    expect(leaked).toEqual([]);
  });

  it('stores only hashes', async () => {
    const dump = async (table: string) => JSON.stringify((await db.query(`SELECT * FROM ${table}`)).rows);
    const stored = [
      await dump('developers'),
      await dump('oauth_clients'),
      await dump('oauth_authorization_codes'),
      await dump('oauth_refresh_tokens'),
    ].join('\n');
    const inClear = Object.entries(secrets)
      .filter(([, value]) => stored.includes(value))
      .map(([name]) => name);
    expect(inClear).toEqual([]);

    const { rows: developers } = await db.query<{ password_hash: string }>(
      'SELECT password_hash FROM developers WHERE password_hash IS NOT NULL',
    );
    expect(developers.length).toBeGreaterThan(0);
    expect(developers.every((d) => /^scrypt\$131072\$8\$1\$/.test(d.password_hash))).toBe(true);
    expect(
      (await Promise.all(developers.map((d) => verifySecret(secrets.password, d.password_hash)))).some(Boolean),
    ).toBe(true);
    const { rows: clients } = await db.query<{ secret_hash: string }>(
      'SELECT secret_hash FROM oauth_clients WHERE secret_hash IS NOT NULL',
    );
    expect(clients.every((c) => /^scrypt\$/.test(c.secret_hash))).toBe(true);
    expect(
      (await db.query('SELECT 1 FROM oauth_authorization_codes WHERE code_hash = $1', [sha256(secrets.code)])).rowCount,
    ).toBe(1);
    expect(
      (
        await db.query('SELECT 1 FROM oauth_refresh_tokens WHERE token_hash = ANY($1)', [
          [sha256(secrets.refreshToken), sha256(secrets.rotatedRefreshToken)],
        ])
      ).rowCount,
    ).toBe(2);
  });
});
