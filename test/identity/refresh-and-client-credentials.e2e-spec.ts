import { generateKeyPairSync } from 'node:crypto';
import { sign } from 'jsonwebtoken';
import { AccessTokens } from '../../src/auth/access-tokens';
import { AppConfig } from '../../src/config/app-config';
import { DevelopersService } from '../../src/developers/developers.service';
import { untilAsleep, withSlowRows } from '../support/slow-rows';
import { createTestApp, TestApp } from '../support/test-app';
import {
  authorizationRequest,
  createApiDeveloper,
  createClient,
  createHuman,
  GENEROUS_LIMIT,
  Human,
  obtainCode,
  redeemCode,
  tokenRequest,
} from './identity-support';

const REDIRECT = 'http://127.0.0.1:40111/callback';

describe('refresh tokens, client credentials and /developers/me', () => {
  let t: TestApp;
  let human: Human;
  let publicClientId: string;
  beforeAll(async () => {
    t = await createTestApp(GENEROUS_LIMIT);
    human = await createHuman(t.app);
    publicClientId = (await createClient(t.app, { redirectUris: ['http://127.0.0.1/callback'], isPublic: true }))
      .clientId;
  });
  afterAll(() => t.close());

  async function login(scope?: string) {
    const { params, verifier } = authorizationRequest(publicClientId, REDIRECT);
    if (scope) params.scope = scope;
    const code = await obtainCode(t.http, params, human);
    return (await redeemCode(t.http, params, code, verifier).expect(200)).body as {
      access_token: string;
      refresh_token: string;
    };
  }

  const refresh = (refreshToken: string, extra: Record<string, string> = {}) =>
    tokenRequest(t.http, {
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: publicClientId,
      ...extra,
    });

  const me = (accessToken: string) => t.http.get('/developers/me').set('Authorization', `Bearer ${accessToken}`);

  describe('refresh_token grant', () => {
    it('rotates the refresh token on every use', async () => {
      const first = await login();
      const second = await refresh(first.refresh_token).expect(200);
      expect(second.headers['cache-control']).toBe('no-store');
      expect(second.body).toEqual({
        access_token: expect.any(String),
        token_type: 'Bearer',
        expires_in: 3600,
        refresh_token: expect.any(String),
        scope: 'workspaces databases query',
      });
      expect(second.body.refresh_token).not.toBe(first.refresh_token);
      const third = await refresh(second.body.refresh_token).expect(200);
      expect(third.body.refresh_token).not.toBe(second.body.refresh_token);
      await me(third.body.access_token).expect(200);
    });

    it('revokes the whole family when a used refresh token comes back', async () => {
      const first = await login();
      const second = await refresh(first.refresh_token).expect(200);
      const replay = await refresh(first.refresh_token);
      expect(replay.status).toBe(400);
      expect(replay.body).toMatchObject({ error: 'invalid_grant', statusCode: 400 });
      expect(replay.body.error_description).toMatch(/already used/);
      // The legitimate holder's current token is revoked too.
      const afterReuse = await refresh(second.body.refresh_token);
      expect(afterReuse.body).toMatchObject({ error: 'invalid_grant' });
      expect(afterReuse.body.error_description).toMatch(/revoked/);
      const rows = await t.dataSource.query<{ revoked: boolean }[]>(
        `SELECT revoked_at IS NOT NULL AS revoked FROM oauth_refresh_tokens
          WHERE family_id = (SELECT family_id FROM oauth_refresh_tokens WHERE token_hash = encode(sha256($1::bytea), 'hex'))`,
        [first.refresh_token],
      );
      expect(rows.length).toBe(2);
      expect(rows.every((r) => r.revoked)).toBe(true);
    });

    it('lets only one of two concurrent refreshes win, and treats the other as reuse', async () => {
      const first = await login();
      const [{ id, family_id: familyId }] = await t.dataSource.query<{ id: string; family_id: string }[]>(
        `SELECT id, family_id FROM oauth_refresh_tokens WHERE token_hash = encode(sha256($1::bytea), 'hex')`,
        [first.refresh_token],
      );
      // Marking this token used waits 0.3 s, row locked, transaction open: the other refresh reads
      // it unused meanwhile, so only the claim's own condition can tell that it lost.
      const answers = await withSlowRows(
        t.dataSource,
        {
          table: 'oauth_refresh_tokens',
          on: 'UPDATE',
          when: `OLD.id = '${id}'::uuid AND OLD.used_at IS NULL AND NEW.used_at IS NOT NULL`,
          seconds: 0.3,
        },
        () => Promise.all([refresh(first.refresh_token), refresh(first.refresh_token)]),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
      const loser = answers.find((a) => a.status === 400)!;
      expect(loser.body).toMatchObject({ error: 'invalid_grant', statusCode: 400 });
      expect(loser.body.error_description).toMatch(/already used/);
      // One successor only, and the reuse revoked the family, the winner's successor included.
      const family = await t.dataSource.query<{ used: boolean; revoked: boolean }[]>(
        `SELECT used_at IS NOT NULL AS used, revoked_at IS NOT NULL AS revoked FROM oauth_refresh_tokens
          WHERE family_id = $1 ORDER BY created`,
        [familyId],
      );
      expect(family).toEqual([
        { used: true, revoked: true },
        { used: false, revoked: true },
      ]);
      const winner = answers.find((a) => a.status === 200)!;
      expect((await refresh(winner.body.refresh_token)).body.error).toBe('invalid_grant');
    });

    it('refuses a refresh token of another client, an unknown one and an expired one', async () => {
      const first = await login();
      const other = await createClient(t.app, { redirectUris: ['http://127.0.0.1/cb'], isPublic: true });
      const foreign = await tokenRequest(t.http, {
        grant_type: 'refresh_token',
        refresh_token: first.refresh_token,
        client_id: other.clientId,
      });
      expect(foreign.body).toMatchObject({ error: 'invalid_grant', statusCode: 400 });
      expect((await refresh('no-such-token')).body).toMatchObject({ error: 'invalid_grant' });

      await t.dataSource.query(
        `UPDATE oauth_refresh_tokens SET expires_at = now() - interval '1 second'
          WHERE token_hash = encode(sha256($1::bytea), 'hex')`,
        [first.refresh_token],
      );
      const expired = await refresh(first.refresh_token);
      expect(expired.body).toMatchObject({ error: 'invalid_grant' });
      expect(expired.body.error_description).toMatch(/expired/);
    });

    it('may narrow the scope, never widen it', async () => {
      const first = await login('workspaces databases');
      const narrowed = await refresh(first.refresh_token, { scope: 'workspaces' }).expect(200);
      expect(narrowed.body.scope).toBe('workspaces');
      // The rotated token keeps the original grant.
      const back = await refresh(narrowed.body.refresh_token).expect(200);
      expect(back.body.scope).toBe('workspaces databases');
      const wider = await refresh(back.body.refresh_token, { scope: 'workspaces query' });
      expect(wider.status).toBe(400);
      expect(wider.body).toMatchObject({ error: 'invalid_scope', statusCode: 400 });
      // The refused request did not use the token up: the client still holds a working one.
      const after = await refresh(back.body.refresh_token).expect(200);
      expect(after.body.scope).toBe('workspaces databases');
    });

    it('keeps the scope granted when the refresh names none: scope left out, empty or only spaces (RFC 6749 §6)', async () => {
      let token = (await login('workspaces')).refresh_token;
      for (const scope of [undefined, '', ' ', '   ']) {
        const res = await refresh(token, scope === undefined ? {} : { scope });
        expect({ scope, status: res.status, granted: res.body.scope }).toEqual({
          scope,
          status: 200,
          granted: 'workspaces',
        });
        token = res.body.refresh_token as string;
      }
    });

    it('revokes the successor of a rotation under way when a used token of the family comes back', async () => {
      const first = await login();
      const second = await refresh(first.refresh_token).expect(200);
      const [{ family_id: familyId }] = await t.dataSource.query<{ family_id: string }[]>(
        `SELECT family_id FROM oauth_refresh_tokens WHERE token_hash = encode(sha256($1::bytea), 'hex')`,
        [first.refresh_token],
      );
      // Storing the rotation's successor waits 0.5 s, its transaction open; the replay of the used
      // first token comes meanwhile and revokes the family.
      const [rotated, replay] = await withSlowRows(
        t.dataSource,
        { table: 'oauth_refresh_tokens', on: 'INSERT', when: `NEW.family_id = '${familyId}'::uuid`, seconds: 0.5 },
        async () => {
          const rotation = refresh(second.body.refresh_token).then((answer) => answer); // sent now
          await untilAsleep(t.dataSource, 'INSERT INTO "oauth_refresh_tokens"');
          return Promise.all([rotation, refresh(first.refresh_token)]);
        },
      );
      expect(replay.body).toMatchObject({ error: 'invalid_grant', statusCode: 400 });
      expect(rotated.status).toBe(200);
      const afterReuse = await refresh(rotated.body.refresh_token);
      expect(afterReuse.body).toMatchObject({ error: 'invalid_grant' });
      expect(afterReuse.body.error_description).toMatch(/revoked/);
      const live = await t.dataSource.query(
        'SELECT id FROM oauth_refresh_tokens WHERE family_id = $1 AND revoked_at IS NULL',
        [familyId],
      );
      expect(live).toEqual([]);
    });

    it('keeps the refresh token usable when the refresh fails on the metadata database: the retry the 503 asks for works', async () => {
      const first = await login();
      const developers = t.app.get(DevelopersService);
      // The developer's check fails as on a connection lost mid-request.
      const spy = jest
        .spyOn(developers, 'findActive')
        .mockRejectedValueOnce(new Error('Connection terminated unexpectedly'));
      let failed;
      try {
        failed = await refresh(first.refresh_token);
      } finally {
        spy.mockRestore();
      }
      expect(failed.status).toBe(503);
      expect(failed.headers['retry-after']).toBeDefined();
      const retried = await refresh(first.refresh_token).expect(200);
      await refresh(retried.body.refresh_token).expect(200);
      const [family] = await t.dataSource.query<{ revoked: number }[]>(
        `SELECT count(*) FILTER (WHERE revoked_at IS NOT NULL)::int AS revoked FROM oauth_refresh_tokens
          WHERE family_id = (SELECT family_id FROM oauth_refresh_tokens WHERE token_hash = encode(sha256($1::bytea), 'hex'))`,
        [first.refresh_token],
      );
      expect(family.revoked).toBe(0);
    });

    it('stops working for a deleted developer', async () => {
      const doomed = await createHuman(t.app, 'doomed');
      const { params, verifier } = authorizationRequest(publicClientId, REDIRECT);
      const code = await obtainCode(t.http, params, doomed);
      const tokens = (await redeemCode(t.http, params, code, verifier).expect(200)).body;
      await t.dataSource.query('UPDATE developers SET deleted = now() WHERE id = $1', [doomed.id]);
      expect((await refresh(tokens.refresh_token)).body).toMatchObject({ error: 'invalid_grant' });
      await me(tokens.access_token).expect(401);
    });
  });

  describe('client_credentials grant', () => {
    it('issues an access token (no refresh token) to an API developer’s client, by Basic or form', async () => {
      const api = await createApiDeveloper(t.app);
      const basic = await tokenRequest(
        t.http,
        { grant_type: 'client_credentials' },
        { id: api.clientId, secret: api.clientSecret },
      ).expect(200);
      expect(basic.headers['cache-control']).toBe('no-store');
      expect(basic.body).toEqual({
        access_token: expect.any(String),
        token_type: 'Bearer',
        expires_in: 3600,
        scope: 'workspaces databases query',
      });
      const post = await tokenRequest(t.http, {
        grant_type: 'client_credentials',
        client_id: api.clientId,
        client_secret: api.clientSecret,
        scope: 'databases',
      }).expect(200);
      expect(post.body.scope).toBe('databases');
      expect((await me(basic.body.access_token).expect(200)).body).toEqual({
        id: api.id,
        email: api.email,
        kind: 'API',
        workspaces: [],
        databases: [],
      });
    });

    it('answers 401 invalid_client for a wrong secret, by Basic or form', async () => {
      const api = await createApiDeveloper(t.app);
      const basic = await tokenRequest(
        t.http,
        { grant_type: 'client_credentials' },
        { id: api.clientId, secret: 'wrong' },
      );
      const post = await tokenRequest(t.http, {
        grant_type: 'client_credentials',
        client_id: api.clientId,
        client_secret: `${api.clientSecret}x`,
      });
      const missing = await tokenRequest(t.http, { grant_type: 'client_credentials', client_id: api.clientId });
      for (const res of [basic, post, missing]) {
        expect(res.status).toBe(401);
        expect(res.body).toEqual({
          error: 'invalid_client',
          error_description: expect.any(String),
          errorCode: 'invalid_credentials',
          message: res.body.error_description,
          statusCode: 401,
        });
        expect(res.headers['www-authenticate']).toMatch(/^Basic/);
      }
    });

    it('is refused to clients that are not an API developer’s', async () => {
      const web = await createClient(t.app, { redirectUris: ['https://app.example/cb'] });
      const res = await tokenRequest(
        t.http,
        { grant_type: 'client_credentials' },
        { id: web.clientId, secret: web.clientSecret! },
      );
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: 'unauthorized_client', errorCode: 'unauthorized_client' });
    });

    it('stops working once the API developer is deleted', async () => {
      const api = await createApiDeveloper(t.app);
      await t.dataSource.query('UPDATE developers SET deleted = now() WHERE id = $1', [api.id]);
      const res = await tokenRequest(
        t.http,
        { grant_type: 'client_credentials' },
        { id: api.clientId, secret: api.clientSecret },
      );
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('unauthorized_client');
    });
  });

  describe('GET /developers/me', () => {
    it('identifies the developer behind each kind of token', async () => {
      const expected = { id: human.id, email: human.email, kind: 'HUMAN', workspaces: [], databases: [] };
      const fromCode = await login();
      expect((await me(fromCode.access_token).expect(200)).body).toEqual(expected);
      const fromRefresh = await refresh(fromCode.refresh_token).expect(200);
      expect((await me(fromRefresh.body.access_token).expect(200)).body).toEqual(expected);
      const operator = t.app.get(AccessTokens).issue({ sub: human.id, scope: '' });
      expect((await me(operator.access_token).expect(200)).body).toEqual(expected);
      // client_credentials (API developer) is covered above.
    });

    it('answers 401 for an expired, a tampered and an unknown-key token', async () => {
      const { access_token: token } = await login();
      const config = t.app.get(AppConfig);
      const [header, payload, signature] = token.split('.');

      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
      const tamperedPayload = Buffer.from(
        JSON.stringify({ ...claims, sub: '00000000-0000-4000-8000-000000000000' }),
      ).toString('base64url');
      const tampered = `${header}.${tamperedPayload}.${signature}`;
      const flipped = `${header}.${payload}.${signature.slice(0, -4)}${signature.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;

      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const unknownKey = sign({ scope: '' }, privateKey, {
        algorithm: 'RS256',
        keyid: 'someone-else',
        subject: human.id,
        issuer: config.env.JWT_ISSUER,
        audience: config.env.JWT_AUDIENCE,
        expiresIn: 600,
      });
      const expired = t.app.get(AccessTokens).issue({ sub: human.id, scope: '' }, -5).access_token;
      const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`;

      for (const [label, bad] of Object.entries({ tampered, flipped, unknownKey, expired, none })) {
        const res = await me(bad);
        expect({ label, status: res.status, errorCode: res.body.errorCode }).toEqual({
          label,
          status: 401,
          errorCode: 'invalid_credentials',
        });
      }
    });
  });
});
