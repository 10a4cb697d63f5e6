import { randomBytes } from 'node:crypto';
import { sign } from 'jsonwebtoken';
import { SigningKeys } from '../../src/auth/signing-keys';
import { AppConfig } from '../../src/config/app-config';
import {
  authorizationRequest,
  createClient,
  createHuman,
  GENEROUS_LIMIT,
  Human,
  obtainCode,
  redeemCode,
  tokenRequest,
} from '../identity/identity-support';
import { createDeveloperWithToken, createTestApp, TestApp } from '../support/test-app';

const REDIRECT = 'http://127.0.0.1:40112/callback';
const unique = () => randomBytes(4).toString('hex');

/**
 * A token is good for the routes of the scopes it carries (README, Identity: the route → scope
 * table): tokens obtained as a client obtains them (an authorization asking for a scope, a refresh
 * narrowing one), refused with 403 `forbidden_operation` naming the missing scope, and nothing
 * changed by a refused request. Tokens that record no scope keep full access.
 */
describe('access token scopes', () => {
  let t: TestApp;
  let human: Human;
  let clientId: string;
  let slug: string;
  beforeAll(async () => {
    t = await createTestApp(GENEROUS_LIMIT);
    human = await createHuman(t.app, 'scopes');
    clientId = (await createClient(t.app, { redirectUris: ['http://127.0.0.1/callback'], isPublic: true })).clientId;
    const full = await login();
    slug = (
      await t.http
        .post('/workspaces')
        .set(bearer(full.access_token))
        .send({ name: `Scopes ${unique()}` })
        .expect(201)
    ).body.slug;
  });
  afterAll(() => t.close());

  const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

  /** The code flow with PKCE, as the Nile CLI runs it; `scope` as the authorization request's parameter. */
  async function login(scope?: string): Promise<{ access_token: string; refresh_token: string; scope: string }> {
    const { params, verifier } = authorizationRequest(clientId, REDIRECT);
    if (scope !== undefined) params.scope = scope;
    const code = await obtainCode(t.http, params, human);
    return (await redeemCode(t.http, params, code, verifier).expect(200)).body;
  }

  const refresh = async (refreshToken: string, scope: string): Promise<{ access_token: string; scope: string }> =>
    (
      await tokenRequest(t.http, {
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
        client_id: clientId,
        scope,
      }).expect(200)
    ).body;

  const count = async (sql: string, params: unknown[]) =>
    Number((await t.dataSource.query<{ n: string }[]>(sql, params))[0].n);

  function expectInsufficientScope(
    res: { status: number; body: unknown; headers: Record<string, string> },
    scope: string,
  ) {
    expect({ status: res.status, body: res.body }).toEqual({
      status: 403,
      body: {
        errorCode: 'forbidden_operation',
        message: `The access token lacks the ${scope} scope this operation needs`,
        statusCode: 403,
      },
    });
    // RFC 6750 §3.1: the client learns which scope to ask for.
    expect(res.headers['www-authenticate']).toBe(`Bearer error="insufficient_scope", scope="${scope}"`);
  }

  it('the Nile CLI’s request (workspaces databases query) reaches workspace and database routes', async () => {
    const cli = await login('workspaces databases query');
    expect(cli.scope).toBe('workspaces databases query');
    const auth = bearer(cli.access_token);
    expect((await t.http.get('/workspaces').set(auth).expect(200)).body).toEqual(
      expect.arrayContaining([expect.objectContaining({ slug })]),
    );
    await t.http.get(`/workspaces/${slug}/databases`).set(auth).expect(200);
    await t.http.get(`/workspaces/${slug}/invites`).set(auth).expect(200);
    await t.http.get('/developers/me').set(auth).expect(200);
  });

  it('a token narrowed to workspaces by a refresh lists workspaces, and is refused on database routes, changing nothing', async () => {
    const granted = await login();
    const narrowed = await refresh(granted.refresh_token, 'workspaces');
    expect(narrowed.scope).toBe('workspaces');
    const auth = bearer(narrowed.access_token);

    expect((await t.http.get('/workspaces').set(auth).expect(200)).body).toEqual(
      expect.arrayContaining([expect.objectContaining({ slug })]),
    );
    await t.http.get(`/workspaces/${slug}`).set(auth).expect(200);

    const name = `db_${unique()}`;
    // Twice: the first use verifies the token, the second finds it remembered (two paths in the guard).
    for (let i = 0; i < 2; i++) {
      const create = await t.http
        .post(`/workspaces/${slug}/databases`)
        .set(auth)
        .send({ databaseName: name, region: 'AWS_US_WEST_2' });
      expectInsufficientScope(create, 'databases');
    }
    expect(await count('SELECT count(*) AS n FROM databases WHERE name = $1', [name])).toBe(0);
    expectInsufficientScope(await t.http.get(`/workspaces/${slug}/databases`).set(auth), 'databases');
    expectInsufficientScope(await t.http.get(`/workspaces/${slug}/compute-types`).set(auth), 'databases');
    // The scope is checked before membership: a foreign or unknown slug gets the same answer.
    expectInsufficientScope(await t.http.get('/workspaces/no-such-workspace-here/databases').set(auth), 'databases');
  });

  it('a token authorized for databases only reaches database routes, and is refused on workspace routes, changing nothing', async () => {
    const granted = await login('databases');
    expect(granted.scope).toBe('databases');
    const auth = bearer(granted.access_token);

    await t.http.get(`/workspaces/${slug}/databases`).set(auth).expect(200);
    await t.http.get(`/workspaces/${slug}/regions`).set(auth).expect(200);
    const name = `db_${unique()}`;
    await t.http
      .post(`/workspaces/${slug}/databases`)
      .set(auth)
      .send({ databaseName: name, region: 'AWS_US_WEST_2' })
      .expect(201);

    for (let i = 0; i < 2; i++) expectInsufficientScope(await t.http.get('/workspaces').set(auth), 'workspaces');
    const workspaceName = `Refused ${unique()}`;
    expectInsufficientScope(await t.http.post('/workspaces').set(auth).send({ name: workspaceName }), 'workspaces');
    expect(await count('SELECT count(*) AS n FROM workspaces WHERE name = $1', [workspaceName])).toBe(0);
    const email = `refused-${unique()}@example.test`;
    expectInsufficientScope(await t.http.post(`/workspaces/${slug}/invites`).set(auth).send({ email }), 'workspaces');
    expect(await count('SELECT count(*) AS n FROM invites WHERE email = $1', [email])).toBe(0);
    expectInsufficientScope(await t.http.get('/developers/me').set(auth), 'workspaces');
  });

  it('a token with only the query scope reaches no control-plane route', async () => {
    const auth = bearer((await login('query')).access_token);
    expectInsufficientScope(await t.http.get('/workspaces').set(auth), 'workspaces');
    expectInsufficientScope(await t.http.get(`/workspaces/${slug}/databases`).set(auth), 'databases');
  });

  it('a token without a scope claim, or with an empty one, keeps full access', async () => {
    const keys = t.app.get(SigningKeys);
    const { JWT_ISSUER: issuer, JWT_AUDIENCE: audience } = t.app.get(AppConfig).env;
    const unscoped = sign({}, keys.privateKey, {
      algorithm: keys.algorithm,
      keyid: keys.keyId,
      issuer,
      audience,
      subject: human.id,
      expiresIn: 300,
    });
    const empty = (await createDeveloperWithToken(t.app)).auth; // the helper's tokens carry scope ''
    const emptySlug = (
      await t.http
        .post('/workspaces')
        .set(empty)
        .send({ name: `Empty ${unique()}` })
        .expect(201)
    ).body.slug;
    for (let i = 0; i < 2; i++) {
      await t.http.get('/workspaces').set(bearer(unscoped)).expect(200);
      await t.http.get(`/workspaces/${slug}/databases`).set(bearer(unscoped)).expect(200);
      await t.http.get('/workspaces').set(empty).expect(200);
      await t.http.get(`/workspaces/${emptySlug}/databases`).set(empty).expect(200);
    }
  });
});
