import { createOwnDatabase, dropOwnDatabase, withAdmin } from '../support/own-database';
import { createDeveloperWithToken, createTestApp, eventually, TestApp } from '../support/test-app';
import { createClient } from '../identity/identity-support';

/**
 * An outage is not bad input: while the metadata database refuses connections, authenticated
 * requests answer 503 `server_error` with Retry-After (never 401, which would make clients throw a
 * good token away), public endpoints that need the database answer the same, and everything
 * recovers by itself once the database is back. The spec takes down a database of its own (the
 * run's shared one serves other spec files meanwhile), and always lets connections in again.
 */
const OPERATOR = 'operator-password-for-tests';

describe('the metadata database refusing connections', () => {
  let t: TestApp;
  let databaseUrl: string;
  let auth: { Authorization: string };
  let slug: string;
  let client: { clientId: string; clientSecret?: string };

  const name = () => new URL(databaseUrl).pathname.slice(1);

  async function refuseConnections(): Promise<void> {
    await withAdmin(async (admin) => {
      await admin.query(`ALTER DATABASE ${admin.escapeIdentifier(name())} ALLOW_CONNECTIONS false`);
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name()]);
    });
  }

  async function allowConnections(): Promise<void> {
    await withAdmin((admin) => admin.query(`ALTER DATABASE ${admin.escapeIdentifier(name())} ALLOW_CONNECTIONS true`));
  }

  beforeAll(async () => {
    databaseUrl = await createOwnDatabase('outage');
    t = await createTestApp({ DATABASE_URL: databaseUrl, DATABASE_POOL_TARGET: '0', OPERATOR_PASSWORD: OPERATOR });
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await t.http.post('/workspaces').set(auth).send({ name: 'Outage drill' }).expect(201)).body.slug;
    client = await createClient(t.app, { redirectUris: ['http://localhost:7777/callback'] });
  });

  afterAll(async () => {
    // Connections back in first, whatever happened, so teardown (and global-teardown) can drop it.
    if (databaseUrl) await allowConnections().catch(() => undefined);
    await t?.close();
    if (databaseUrl) await dropOwnDatabase(databaseUrl);
  });

  const unavailable = {
    errorCode: 'server_error',
    message: expect.any(String),
    statusCode: 503,
  };

  it('answers 503 with Retry-After (not 401) to authenticated requests, and 401 still to bad tokens', async () => {
    await t.http.get('/workspaces').set(auth).expect(200);
    await refuseConnections();
    try {
      const answers = [];
      for (const [method, path] of [
        ['get', '/developers/me'],
        ['get', '/workspaces'],
        ['get', `/workspaces/${slug}`],
        ['get', `/workspaces/${slug}/databases`],
        ['post', '/workspaces'],
      ] as const) {
        const res = await t.http[method](path)
          .set(auth)
          .send(method === 'post' ? { name: 'During the outage' } : undefined);
        answers.push({
          path: `${method.toUpperCase()} ${path}`,
          status: res.status,
          body: res.body,
          retryAfter: res.headers['retry-after'],
        });
      }
      expect(answers).toEqual(
        answers.map((a) => ({
          path: a.path,
          status: 503,
          body: unavailable,
          retryAfter: expect.stringMatching(/^\d+$/),
        })),
      );

      // A token that is really bad is still a 401: its signature is checked without the database.
      const forged = await t.http.get('/workspaces').set('Authorization', `${auth.Authorization.slice(0, -4)}AAAA`);
      expect(forged.status).toBe(401);
      expect(forged.body).toEqual({ errorCode: 'invalid_credentials', message: expect.any(String), statusCode: 401 });
      // What needs no database keeps working.
      await t.http.get('/.well-known/jwks.json').expect(200);
    } finally {
      await allowConnections();
    }
  });

  it('still serves /metrics, leaving out what it cannot read (not showing it as 0)', async () => {
    const series = (exposition: string, name: string) =>
      exposition.split('\n').filter((line) => line.startsWith(`${name} `) || line.startsWith(`${name}{`));
    const before = (await t.http.get('/metrics').auth('operator', OPERATOR).expect(200)).text;
    expect(series(before, 'control_plane_invite_emails_last_hour')).toEqual([
      'control_plane_invite_emails_last_hour 0',
    ]);
    await refuseConnections();
    try {
      const during = (await t.http.get('/metrics').auth('operator', OPERATOR).expect(200)).text;
      expect(series(during, 'control_plane_invite_emails_last_hour')).toEqual([]);
      expect(series(during, 'control_plane_databases')).toEqual([]);
      expect(series(during, 'control_plane_invite_emails_per_hour_limit')).toHaveLength(1);
    } finally {
      await allowConnections();
    }
    await eventually(async () => (await t.http.get('/workspaces').set(auth)).status === 200, 30000, 250);
  });

  it('recovers by itself once the database lets connections in again', async () => {
    await refuseConnections();
    try {
      expect((await t.http.get('/workspaces').set(auth)).status).not.toBe(200);
    } finally {
      await allowConnections();
    }
    await eventually(async () => (await t.http.get('/workspaces').set(auth)).status === 200, 30000, 250);
    const back = await t.http.get(`/workspaces/${slug}`).set(auth).expect(200);
    expect(back.body).toMatchObject({ slug });
  });

  it('answers 503 with Retry-After on the public endpoints that need the database (token endpoint, login page, join page)', async () => {
    await refuseConnections();
    try {
      const token = await t.http
        .post('/oauth2/token')
        .type('form')
        .send({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret });
      expect({ status: token.status, retryAfter: token.headers['retry-after'] }).toEqual({
        status: 503,
        retryAfter: expect.stringMatching(/^\d+$/),
      });
      expect(token.body).toMatchObject(unavailable);

      for (const path of [
        '/authorize?response_type=code&client_id=nilecli&redirect_uri=http%3A%2F%2Flocalhost%3A1234%2Fcallback&code_challenge=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa&code_challenge_method=S256',
        '/invites/accept?code=some-code',
      ]) {
        const page = await t.http.get(path);
        expect({ path, status: page.status, retryAfter: page.headers['retry-after'] }).toEqual({
          path,
          status: 503,
          retryAfter: expect.stringMatching(/^\d+$/),
        });
      }
    } finally {
      await allowConnections();
    }
    await eventually(async () => (await t.http.get('/workspaces').set(auth)).status === 200, 30000, 250);
  });
});
