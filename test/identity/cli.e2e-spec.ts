import Bull from 'bull';
import { randomBytes } from 'node:crypto';
import { verify } from 'jsonwebtoken';
import { Client } from 'pg';
import { SigningKeys } from '../../src/auth/signing-keys';
import { verifySecret } from '../../src/common/crypto/password-hasher';
import { SecretBox } from '../../src/common/crypto/secret-box';
import { AppConfig } from '../../src/config/app-config';
import { secondDataPlaneUrl } from '../support/second-data-plane';
import {
  createIsolatedMetadataDatabase,
  createTestApp,
  dropMetadataDatabase,
  TestApp,
  uniqueEmail,
} from '../support/test-app';
import { GENEROUS_LIMIT, runCli, tokenRequest } from './identity-support';

/** The operator commands, run from the built app as `npm run --silent cli -- …` runs them. */
describe('operator CLI (dist/src/cli.js)', () => {
  let db: Client;
  let t: TestApp;
  beforeAll(async () => {
    db = new Client({ connectionString: process.env.DATABASE_URL });
    await db.connect();
    t = await createTestApp(GENEROUS_LIMIT);
  });
  afterAll(async () => {
    await db.end();
    await t.close();
  });

  it('developer:create --email --password creates a HUMAN developer, e-mail lower-cased, password hashed', async () => {
    const email = uniqueEmail('Cli-Human').replace('cli-human', 'Cli-Human');
    const result = await runCli(['developer:create', '--email', email, '--password', 'correct horse battery']);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    expect(result.json).toEqual({ id: expect.any(String), email: email.toLowerCase(), kind: 'HUMAN' });
    const { rows } = await db.query<{ password_hash: string }>('SELECT password_hash FROM developers WHERE id = $1', [
      result.json!.id,
    ]);
    expect(rows[0].password_hash).toMatch(/^scrypt\$/);
    expect(await verifySecret('correct horse battery', rows[0].password_hash)).toBe(true);

    const again = await runCli(['developer:create', '--email', email.toUpperCase(), '--password', 'another password']);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/already exists/);
  });

  it('developer:create --password - reads the password from standard input (out of argv, ps and shell history)', async () => {
    const email = uniqueEmail('cli-stdin');
    const result = await runCli(['developer:create', '--email', email, '--password', '-'], {}, 'piped passphrase -\n');
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    const { rows } = await db.query<{ password_hash: string }>('SELECT password_hash FROM developers WHERE id = $1', [
      result.json!.id,
    ]);
    // One trailing newline (what `echo` or a here-string adds) is not part of the password.
    expect(await verifySecret('piped passphrase -', rows[0].password_hash)).toBe(true);
    expect(await verifySecret('-', rows[0].password_hash)).toBe(false);
  });

  it('developer:create --password - with nothing on standard input is refused before anything is created', async () => {
    const email = uniqueEmail('cli-stdin-empty');
    const result = await runCli(['developer:create', '--email', email, '--password', '-'], {}, '');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/--password -: nothing on standard input/);
    const { rowCount } = await db.query('SELECT 1 FROM developers WHERE email = $1', [email]);
    expect(rowCount).toBe(0);
  });

  it('developer:create --kind API creates an API developer and its client, showing the secret once', async () => {
    const email = uniqueEmail('cli-api');
    const result = await runCli(['developer:create', '--email', email, '--kind', 'API']);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    expect(result.json).toEqual({
      id: expect.any(String),
      email,
      kind: 'API',
      clientId: expect.any(String),
      clientSecret: expect.any(String),
    });
    const { clientId, clientSecret } = result.json as { clientId: string; clientSecret: string };
    const { rows } = await db.query<{ secret_hash: string; developer_id: string; is_public: boolean }>(
      'SELECT secret_hash, developer_id, is_public FROM oauth_clients WHERE client_id = $1',
      [clientId],
    );
    expect(rows[0]).toEqual({
      secret_hash: expect.stringMatching(/^scrypt\$/),
      developer_id: result.json!.id,
      is_public: false,
    });
    expect(rows[0].secret_hash).not.toContain(clientSecret);

    const tokens = await tokenRequest(
      t.http,
      { grant_type: 'client_credentials' },
      { id: clientId, secret: clientSecret },
    );
    expect(tokens.status).toBe(200);
    const me = await t.http
      .get('/developers/me')
      .set('Authorization', `Bearer ${tokens.body.access_token}`)
      .expect(200);
    expect(me.body).toMatchObject({ id: result.json!.id, email, kind: 'API' });
  });

  it('token:issue mints an access token for the developer, with an optional lifetime', async () => {
    const email = uniqueEmail('cli-token');
    const created = await runCli(['developer:create', '--email', email, '--password', 'a long password']);
    const result = await runCli(['token:issue', '--email', email, '--ttl', '120']);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    expect(result.json).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 120 });
    const config = t.app.get(AppConfig);
    const claims = verify(result.json!.access_token as string, t.app.get(SigningKeys).publicKey, {
      issuer: config.env.JWT_ISSUER,
      audience: config.env.JWT_AUDIENCE,
    }) as { sub: string; exp: number; iat: number };
    expect(claims.sub).toBe(created.json!.id);
    expect(claims.exp - claims.iat).toBe(120);
    const me = await t.http
      .get('/developers/me')
      .set('Authorization', `Bearer ${result.json!.access_token as string}`)
      .expect(200);
    expect(me.body.email).toBe(email);

    const defaults = await runCli(['token:issue', '--email', email]);
    expect(defaults.json).toMatchObject({ expires_in: 3600 });
  });

  it('client:create registers a confidential or a public client', async () => {
    const id = `cli-app-${Date.now()}`;
    const confidential = await runCli([
      'client:create',
      '--client-id',
      id,
      '--redirect-uri',
      'https://app.example/callback',
      '--redirect-uri',
      'http://127.0.0.1/callback',
    ]);
    expect({ code: confidential.code, stderr: confidential.stderr }).toEqual({ code: 0, stderr: '' });
    expect(confidential.json).toEqual({
      clientId: id,
      name: id,
      redirectUris: ['https://app.example/callback', 'http://127.0.0.1/callback'],
      public: false,
      clientSecret: expect.any(String),
    });
    const publicClient = await runCli([
      'client:create',
      '--client-id',
      `${id}-public`,
      '--redirect-uri',
      'http://localhost/cb',
      '--public',
    ]);
    expect({ code: publicClient.code, stderr: publicClient.stderr }).toEqual({ code: 0, stderr: '' });
    expect(publicClient.json).toEqual({
      clientId: `${id}-public`,
      name: `${id}-public`,
      redirectUris: ['http://localhost/cb'],
      public: true,
    });
    // The new public client can start a login on any loopback port.
    await t.http
      .get('/authorize')
      .query({
        response_type: 'code',
        client_id: `${id}-public`,
        redirect_uri: 'http://localhost:7777/cb',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      })
      .expect(200);
  });

  it('prints its usage and exits 0 when asked for help', async () => {
    for (const ask of ['--help', '-h', 'help']) {
      const res = await runCli([ask]);
      expect({ ask, code: res.code, stderr: res.stderr }).toEqual({ ask, code: 0, stderr: '' });
      expect(res.stdout).toMatch(/^Usage: npm run --silent cli -- <command> \[options\]\n {2}developer:create/);
    }
  });

  it('exits non-zero with a clear message on errors', async () => {
    const cases: [string[], RegExp][] = [
      [[], /Usage/],
      [['no:such-command'], /Unknown command no:such-command/],
      [['__proto__'], /Unknown command __proto__\nUsage/],
      [['constructor'], /Unknown command constructor\nUsage/],
      [['developer:create', '--email', uniqueEmail()], /--password is required/],
      [['developer:create', '--email', 'not-an-email', '--password', 'long enough'], /not a valid e-mail/],
      [['developer:create', '--email', uniqueEmail(), '--password', 'short'], /password of 8/],
      [['developer:create', '--email', uniqueEmail(), '--kind', 'ROBOT'], /--kind must be HUMAN or API/],
      [['developer:create', '--email', uniqueEmail(), '--kind', 'API', '--password', 'x'], /no password/],
      [['developer:create', '--email', uniqueEmail(), '--unknown', 'x'], /Unknown option '--unknown'/],
      [['token:issue', '--email', 'nobody@example.test'], /No developer with e-mail/],
      [['token:issue', '--email', 'nobody@example.test', '--ttl', 'soon'], /--ttl must be/],
      // Decimal only: not read as 120 or 1000.
      [['token:issue', '--email', 'nobody@example.test', '--ttl', '0x78'], /--ttl must be/],
      [['token:issue', '--email', 'nobody@example.test', '--ttl', '1e3'], /--ttl must be/],
      [['client:create', '--client-id', 'x'], /--redirect-uri is required/],
      [['client:create', '--client-id', 'x', '--redirect-uri', 'http://app.example/cb'], /must use https/],
      [['client:create', '--client-id', 'nilecli', '--redirect-uri', 'https://a.example/cb'], /already exists/],
      [['client:create', '--client-id', 'bad id', '--redirect-uri', 'https://a.example/cb'], /client id must be/],
      // Names every object has are not regions.
      [['server:add', '--region', 'constructor', '--url', 'postgres://a@b/c'], /--region must be one of/],
      [['server:add', '--region', 'toString', '--url', 'postgres://a@b/c'], /--region must be one of/],
      // A region no database is created in would never use the server.
      [
        ['server:add', '--region', 'AZURE_EASTUS', '--url', 'postgres://a@b/c'],
        /--region must be one of AWS_US_WEST_2, AWS_EU_CENTRAL_1 \(the regions databases are created in\)/,
      ],
      [['server:add', '--region', 'AWS_US_WEST_2', '--url', '-'], /--url -: nothing on standard input/],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli(args)));
    cases.forEach(([args, message], i) => {
      const { code, json, stderr } = results[i];
      expect({ args, code, json }).toEqual({ args, code: 1, json: undefined });
      expect(stderr).toMatch(message);
    });
  }, 120_000); // one CLI process per case, all at once

  it('secrets:reseal seals every stored secret again with the first key, so the others can be removed', async () => {
    const metadataUrl = await createIsolatedMetadataDatabase();
    const key = () => randomBytes(32).toString('base64');
    const [oldKey, newKey] = [`old:${key()}`, `new:${key()}`];
    const boxOf = (keys: string) =>
      new SecretBox({
        secrets: {
          credentialKeys: keys
            .split(',')
            .map((k) => ({ id: k.split(':')[0], key: Buffer.from(k.split(':')[1], 'base64') })),
        },
      } as unknown as AppConfig);
    try {
      // Under the old key: the servers registered from the environment, and a credential's password.
      expect(
        (await runCli(['server:list'], { DATABASE_URL: metadataUrl, CREDENTIAL_ENCRYPTION_KEYS: oldKey })).code,
      ).toBe(0);
      const db = new Client({ connectionString: metadataUrl });
      await db.connect();
      const sealed = async () =>
        (
          await db.query<{ sealed: string }>(
            `SELECT admin_url_ciphertext AS sealed FROM data_plane_servers
             UNION ALL SELECT password_ciphertext FROM credentials`,
          )
        ).rows.map((r) => r.sealed);
      try {
        await db.query(
          `WITH w AS (INSERT INTO workspaces (name, slug) VALUES ('reseal', 'reseal') RETURNING id),
                d AS (INSERT INTO databases (workspace_id, name, region, server_id, status, physical_name)
                      SELECT w.id, 'sealed', 'AWS_US_WEST_2', s.id, 'READY', 'cp_reseal_' || md5(random()::text)
                        FROM w, data_plane_servers s WHERE s.region = 'AWS_US_WEST_2' RETURNING id)
           INSERT INTO credentials (id, database_id, password_ciphertext) SELECT gen_random_uuid(), d.id, $1 FROM d`,
          [boxOf(oldKey).seal('the password')],
        );
        const before = await sealed();
        expect(before).toHaveLength(3);
        expect(before.every((s) => s.startsWith('old:'))).toBe(true);

        const both = `${newKey},${oldKey}`;
        const reseal = await runCli(['secrets:reseal'], {
          DATABASE_URL: metadataUrl,
          CREDENTIAL_ENCRYPTION_KEYS: both,
        });
        expect({ code: reseal.code, stderr: reseal.stderr }).toEqual({ code: 0, stderr: '' });
        const none = { credentials: 0, data_plane_servers: 0, invites: 0 };
        expect(reseal.json).toEqual({
          keyId: 'new',
          resealed: { credentials: 1, data_plane_servers: 2, invites: 0 },
          remaining: none,
        });
        // The new key alone opens every one of them, to the same secrets.
        const after = await sealed();
        expect(after.every((s) => s.startsWith('new:'))).toBe(true);
        expect(after.map((s) => boxOf(newKey).open(s))).toEqual(before.map((s) => boxOf(oldKey).open(s)));
        // Nothing is left to do.
        const again = await runCli(['secrets:reseal'], { DATABASE_URL: metadataUrl, CREDENTIAL_ENCRYPTION_KEYS: both });
        expect(again.json).toEqual({ keyId: 'new', resealed: none, remaining: none });

        // A secret sealed with a key no longer configured is named, left as it is, and the exit is 1.
        await db.query('UPDATE credentials SET password_ciphertext = $1', [boxOf(oldKey).seal('the password')]);
        const lost = await runCli(['secrets:reseal'], {
          DATABASE_URL: metadataUrl,
          CREDENTIAL_ENCRYPTION_KEYS: newKey,
        });
        expect(lost.code).toBe(1);
        expect(lost.stderr).toMatch(
          /still sealed with other keys: 1 in credentials \(1 with a key no longer configured\); keep the old keys/,
        );
      } finally {
        await db.end();
      }
    } finally {
      await dropMetadataDatabase(metadataUrl);
    }
  });

  it('reconcile runs one pass of every task and prints how each went and what it enqueued', async () => {
    // Its own metadata database and queues: a pass over the run's shared rows would enqueue for every spec.
    const metadataUrl = await createIsolatedMetadataDatabase();
    const env = { DATABASE_URL: metadataUrl, QUEUE_PREFIX: `cli-reconcile-${Date.now()}`, DATABASE_POOL_TARGET: '0' };
    try {
      // Any command registers the environment's data-plane servers.
      expect((await runCli(['server:list'], env)).code).toBe(0);
      const db = new Client({ connectionString: metadataUrl });
      await db.connect();
      try {
        // A database whose build job was lost (REQUESTED, no job): the pass enqueues it again.
        await db.query(
          `WITH w AS (INSERT INTO workspaces (name, slug) VALUES ('reconcile', 'reconcile') RETURNING id)
           INSERT INTO databases (workspace_id, name, region, server_id, status, physical_name)
           SELECT w.id, 'lost', 'AWS_US_WEST_2', s.id, 'REQUESTED', $1
             FROM w, data_plane_servers s WHERE s.region = 'AWS_US_WEST_2'`,
          [`${process.env.DATA_PLANE_NAME_PREFIX}lost_${Date.now()}`],
        );
      } finally {
        await db.end();
      }
      // With Redis away nothing can be enqueued: the pass has not done its work, and says so.
      const away = await runCli(['reconcile'], { ...env, REDIS_URL: 'redis://127.0.0.1:1' });
      expect(away.code).toBe(1);
      // Each failed task with why, since the command's process logs nothing.
      expect(away.stderr).toMatch(/reconcile tasks failed: .*databases \([^)]*could not be enqueued[^)]*\)/);
      const pass = await runCli(['reconcile'], env);
      expect({ code: pass.code, stderr: pass.stderr }).toEqual({ code: 0, stderr: '' });
      expect(pass.json).toEqual({
        tasks: expect.objectContaining({
          databases: 'ok',
          credentials: 'ok',
          compute: 'ok',
          'invite-emails': 'ok',
          // Puts the telemetry schedule back, as the processes running the processors do.
          'telemetry-schedule': 'ok',
        }),
        enqueued: expect.objectContaining({ 'database-lifecycle': 1 }),
      });
      expect(Object.values(pass.json!.tasks as Record<string, string>).every((outcome) => outcome === 'ok')).toBe(true);
      // The schedule it put back is left as it is by a later pass with another interval in its
      // environment: the processes running the processors keep it at theirs.
      const schedules = async () => {
        const queue = new Bull('telemetry', process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
          prefix: env.QUEUE_PREFIX,
        });
        try {
          return (await queue.getRepeatableJobs()).map((job) => [job.name, Number(job.every)]);
        } finally {
          await queue.close();
        }
      };
      const before = await schedules();
      expect(before).toHaveLength(1);
      const again = await runCli(['reconcile'], { ...env, TELEMETRY_INTERVAL_SECONDS: '3599' });
      expect(again.code).toBe(0);
      expect(await schedules()).toEqual(before);
    } finally {
      await dropMetadataDatabase(metadataUrl);
    }
  });

  it('server:add --url - reads the admin URL from standard input (out of argv, ps and shell history)', async () => {
    // A fleet of its own: registering a server in the run's shared database would change every spec's placement.
    const metadataUrl = await createIsolatedMetadataDatabase();
    try {
      const url = secondDataPlaneUrl();
      const added = await runCli(
        ['server:add', '--region', 'AWS_EU_CENTRAL_1', '--url', '-'],
        { DATABASE_URL: metadataUrl },
        `${url}\n`,
      );
      expect({ code: added.code, stderr: added.stderr }).toEqual({ code: 0, stderr: '' });
      expect(added.json).toMatchObject({ region: 'AWS_EU_CENTRAL_1', publicHost: new URL(url).host, state: 'ACTIVE' });
      const listed = await runCli(['server:list'], { DATABASE_URL: metadataUrl });
      expect((listed.json as unknown as { id: string }[]).map((server) => server.id)).toContain(
        (added.json as { id: string }).id,
      );
    } finally {
      await dropMetadataDatabase(metadataUrl);
    }
  });
});
