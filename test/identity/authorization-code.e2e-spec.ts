import { verify } from 'jsonwebtoken';
import { SigningKeys } from '../../src/auth/signing-keys';
import { AppConfig } from '../../src/config/app-config';
import { createTestApp, TestApp } from '../support/test-app';
import {
  authorizationRequest,
  createClient,
  createHuman,
  GENEROUS_LIMIT,
  Human,
  obtainCode,
  pkce,
  redeemCode,
  submitLogin,
  tokenRequest,
} from './identity-support';

const NILECLI_REDIRECT = 'http://localhost:53682/callback';

function expectTokenError(res: { status: number; body: Record<string, unknown> }, error: string, status = 400) {
  expect({ status: res.status, error: res.body.error }).toEqual({ status, error });
  expect(res.body).toEqual({
    error,
    error_description: expect.any(String),
    errorCode: expect.any(String),
    message: res.body.error_description,
    statusCode: status,
  });
}

describe('authorization code flow with PKCE (over HTTP)', () => {
  let t: TestApp;
  let human: Human;
  beforeAll(async () => {
    t = await createTestApp(GENEROUS_LIMIT);
    human = await createHuman(t.app);
  });
  afterAll(() => t.close());

  describe('the login page', () => {
    it('renders a plain, accessible form carrying the request', async () => {
      const { params } = authorizationRequest('nilecli', NILECLI_REDIRECT);
      const res = await t.http.get('/authorize').query(params).expect(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['content-security-policy']).toContain("form-action 'self' http: https:");
      expect(res.headers['content-security-policy']).toContain("default-src 'none'");
      expect(res.headers['x-frame-options']).toBe('DENY');
      const html = res.text;
      expect(html).not.toMatch(/<script/i);
      expect(html).not.toMatch(/\son[a-z]+=/i);
      expect(html).toContain('<html lang="en">');
      expect(html).toContain('<label for="email">');
      expect(html).toContain('<label for="password">');
      expect(html.match(/<input id="email" name="email" type="email"/g)).toHaveLength(1);
      expect(html.match(/<input id="password" name="password" type="password"/g)).toHaveLength(1);
      expect(html.match(/<button type="submit">/g)).toHaveLength(1);
      // No action: the form posts back to the URL it was served from (see login-form-action.e2e-spec).
      expect(html).toContain('<form method="post">');
      for (const [name, value] of Object.entries(params)) {
        expect(html).toContain(`<input type="hidden" name="${name}" value="${value}">`);
      }
      expect(html).toContain('Nile CLI');
    });

    it('escapes what the request carries', async () => {
      const { params } = authorizationRequest('nilecli', NILECLI_REDIRECT);
      const res = await t.http
        .get('/authorize')
        .query({ ...params, state: '"><script>alert(1)</script>' })
        .expect(200);
      expect(res.text).not.toContain('<script>');
      expect(res.text).toContain('value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"');
    });

    it('shows an error page, never a redirect, for an unknown client', async () => {
      const { params } = authorizationRequest('no-such-client', 'https://evil.example/cb');
      const res = await t.http.get('/authorize').query(params).redirects(0).expect(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain('not registered');
      expect(res.text).not.toContain('evil.example');
    });

    it('shows an error page for a redirect_uri the client did not register', async () => {
      for (const redirect of [
        'https://evil.example/callback',
        'http://localhost:8080/other-path',
        'http://localhost.evil.example/callback',
        'http://127.0.0.1:8080/callback', // registered host is localhost
        'http://localhost:8080/callback#fragment',
        'http://user@localhost:8080/callback',
      ]) {
        const { params } = authorizationRequest('nilecli', redirect);
        const res = await t.http.get('/authorize').query(params).redirects(0);
        expect({ redirect, status: res.status, location: res.headers.location }).toEqual({
          redirect,
          status: 400,
          location: undefined,
        });
      }
      const noRedirect = await t.http.get('/authorize').query({ client_id: 'nilecli', response_type: 'code' });
      expect(noRedirect.status).toBe(400);
      expect(noRedirect.headers.location).toBeUndefined();
    });

    it('does not redirect to an unregistered URI even when the login is submitted', async () => {
      const { params } = authorizationRequest('nilecli', 'https://evil.example/callback');
      const res = await submitLogin(t.http, params, human.email, human.password);
      expect(res.status).toBe(400);
      expect(res.headers.location).toBeUndefined();
    });

    it('matches loopback redirect URIs on any port (RFC 8252)', async () => {
      for (const port of [1024, 8080, 53682, 65535]) {
        const { params } = authorizationRequest('nilecli', `http://localhost:${port}/callback`);
        await t.http.get('/authorize').query(params).expect(200);
      }
      const { params } = authorizationRequest('nilecli', 'http://localhost/callback');
      await t.http.get('/authorize').query(params).expect(200);
    });

    it('redirects request errors back to a registered redirect URI', async () => {
      const cases: [Record<string, string | undefined>, string][] = [
        [{ response_type: 'token' }, 'unsupported_response_type'],
        [{ response_type: undefined }, 'invalid_request'],
        [{ code_challenge: undefined, code_challenge_method: undefined }, 'invalid_request'], // public client: PKCE required
        [{ code_challenge_method: 'plain' }, 'invalid_request'],
        [{ code_challenge: 'too-short' }, 'invalid_request'],
        [{ scope: 'workspaces admin' }, 'invalid_scope'],
      ];
      for (const [change, error] of cases) {
        const { params } = authorizationRequest('nilecli', NILECLI_REDIRECT);
        const res = await t.http
          .get('/authorize')
          .query({ ...params, ...change })
          .redirects(0);
        expect({ change, status: res.status }).toEqual({ change, status: 302 });
        const location = new URL(res.headers.location);
        expect(`${location.origin}${location.pathname}`).toBe('http://localhost:53682/callback');
        expect(location.searchParams.get('error')).toBe(error);
        expect(location.searchParams.get('state')).toBe(params.state);
        expect(location.searchParams.get('code')).toBeNull();
      }
    });

    it('re-renders the form with an error, and does not redirect, on wrong credentials', async () => {
      const { params } = authorizationRequest('nilecli', NILECLI_REDIRECT);
      for (const [email, password] of [
        [human.email, 'wrong-password'],
        ['nobody@example.test', human.password],
        [human.email, ''],
      ]) {
        const res = await submitLogin(t.http, params, email, password);
        expect(res.status === 401 || res.status === 400).toBe(true);
        expect(res.headers.location).toBeUndefined();
        expect(res.headers['content-type']).toMatch(/^text\/html/);
        expect(res.text).toContain('role="alert"');
        expect(res.text).toContain('<input id="password" name="password" type="password"');
        expect(res.text).not.toContain(human.password);
      }
    });

    it('accepts the e-mail in any case', async () => {
      const { params } = authorizationRequest('nilecli', NILECLI_REDIRECT);
      const res = await submitLogin(t.http, params, human.email.toUpperCase(), human.password);
      expect(res.status).toBe(302);
    });
  });

  describe('the code exchange', () => {
    it('redirects with code, state and iss, then exchanges the code for tokens', async () => {
      const { params, verifier } = authorizationRequest('nilecli', NILECLI_REDIRECT);
      const login = await submitLogin(t.http, params, human.email, human.password);
      expect(login.status).toBe(302);
      const location = new URL(login.headers.location);
      expect(`${location.origin}${location.pathname}`).toBe('http://localhost:53682/callback');
      expect(location.searchParams.get('state')).toBe(params.state);
      expect(location.searchParams.get('iss')).toBe(t.app.get(AppConfig).env.JWT_ISSUER);
      const code = location.searchParams.get('code')!;
      expect(code.length).toBeGreaterThanOrEqual(40);

      const res = await redeemCode(t.http, params, code, verifier).expect(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['content-type']).toMatch(/application\/json/);
      expect(res.body).toEqual({
        access_token: expect.any(String),
        token_type: 'Bearer',
        expires_in: 3600,
        refresh_token: expect.any(String),
        scope: 'workspaces databases query',
      });
      const config = t.app.get(AppConfig);
      const claims = verify(res.body.access_token, t.app.get(SigningKeys).publicKey, {
        algorithms: ['RS256'],
        issuer: config.env.JWT_ISSUER,
        audience: config.env.JWT_AUDIENCE,
      }) as Record<string, unknown>;
      expect(claims).toMatchObject({ sub: human.id, scope: 'workspaces databases query', client_id: 'nilecli' });
      expect(Object.keys(claims).sort()).toEqual(['aud', 'client_id', 'exp', 'iat', 'iss', 'jti', 'scope', 'sub']);

      const me = await t.http.get('/developers/me').set('Authorization', `Bearer ${res.body.access_token}`).expect(200);
      expect(me.body).toEqual({ id: human.id, email: human.email, kind: 'HUMAN', workspaces: [], databases: [] });
    });

    it('grants the requested scopes only', async () => {
      const { params, verifier } = authorizationRequest('nilecli', NILECLI_REDIRECT);
      params.scope = 'query workspaces query';
      const code = await obtainCode(t.http, params, human);
      const res = await redeemCode(t.http, params, code, verifier).expect(200);
      expect(res.body.scope).toBe('workspaces query');
    });

    it('works without state (the Nile CLI sends none)', async () => {
      const { params, verifier } = authorizationRequest('nilecli', NILECLI_REDIRECT);
      delete params.state;
      const login = await submitLogin(t.http, params, human.email, human.password);
      expect(login.status).toBe(302);
      const location = new URL(login.headers.location);
      expect(location.searchParams.has('state')).toBe(false);
      await redeemCode(t.http, params, location.searchParams.get('code')!, verifier).expect(200);
    });

    it('fails with invalid_grant for a wrong code_verifier, which neither spends the code nor revokes what it granted', async () => {
      const { params, verifier } = authorizationRequest('nilecli', NILECLI_REDIRECT);
      const code = await obtainCode(t.http, params, human);
      // Whoever saw the code (it is no secret without its verifier) presents it first.
      const res = await redeemCode(t.http, params, code, pkce().verifier);
      expectTokenError(res, 'invalid_grant');
      expect(res.body.error_description).toBe('code_verifier does not match the code_challenge');
      expect(res.headers['cache-control']).toBe('no-store');
      const granted = await redeemCode(t.http, params, code, verifier).expect(200);
      // Presented again without the verifier: refused as before, and the tokens it granted stay granted.
      expectTokenError(await redeemCode(t.http, params, code, pkce().verifier), 'invalid_grant');
      await tokenRequest(t.http, {
        grant_type: 'refresh_token',
        refresh_token: granted.body.refresh_token,
        client_id: 'nilecli',
      }).expect(200);
    });

    it('fails with invalid_grant without the code_verifier the challenge asked for, the code still good', async () => {
      const { params, verifier } = authorizationRequest('nilecli', NILECLI_REDIRECT);
      const code = await obtainCode(t.http, params, human);
      const res = await tokenRequest(t.http, {
        grant_type: 'authorization_code',
        code,
        redirect_uri: params.redirect_uri,
        client_id: 'nilecli',
      });
      expectTokenError(res, 'invalid_grant');
      expect(res.body.error_description).toBe('code_verifier is required (PKCE)');
      await redeemCode(t.http, params, code, verifier).expect(200);
    });

    it('fails with invalid_grant for a reused code, and revokes what the code granted', async () => {
      const { params, verifier } = authorizationRequest('nilecli', NILECLI_REDIRECT);
      const code = await obtainCode(t.http, params, human);
      const first = await redeemCode(t.http, params, code, verifier).expect(200);
      const again = await redeemCode(t.http, params, code, verifier);
      expectTokenError(again, 'invalid_grant');
      expect(again.body.error_description).toMatch(/already used/);
      const refresh = await tokenRequest(t.http, {
        grant_type: 'refresh_token',
        refresh_token: first.body.refresh_token,
        client_id: 'nilecli',
      });
      expectTokenError(refresh, 'invalid_grant');
    });

    it('fails with invalid_grant for a redirect_uri other than the authorization request’s', async () => {
      const { params, verifier } = authorizationRequest('nilecli', NILECLI_REDIRECT);
      const code = await obtainCode(t.http, params, human);
      const res = await redeemCode(
        t.http,
        { ...params, redirect_uri: 'http://localhost:9999/callback' },
        code,
        verifier,
      );
      expectTokenError(res, 'invalid_grant');
      expect(res.body.error_description).toMatch(/redirect_uri/);
    });

    it('fails with invalid_grant for an expired code', async () => {
      const { params, verifier } = authorizationRequest('nilecli', NILECLI_REDIRECT);
      const code = await obtainCode(t.http, params, human);
      const [{ minutes }] = await t.dataSource.query<{ minutes: number }[]>(
        `SELECT extract(epoch FROM expires_at - created) / 60 AS minutes FROM oauth_authorization_codes
          WHERE code_hash = encode(sha256($1::bytea), 'hex')`,
        [code],
      );
      expect(Number(minutes)).toBeGreaterThan(0);
      expect(Number(minutes)).toBeLessThanOrEqual(10);
      await t.dataSource.query(
        `UPDATE oauth_authorization_codes SET expires_at = now() - interval '1 second'
          WHERE code_hash = encode(sha256($1::bytea), 'hex')`,
        [code],
      );
      const res = await redeemCode(t.http, params, code, verifier);
      expectTokenError(res, 'invalid_grant');
      expect(res.body.error_description).toMatch(/expired/);
    });

    it('fails with invalid_grant for an unknown code and for another client’s code', async () => {
      const { params, verifier } = authorizationRequest('nilecli', NILECLI_REDIRECT);
      expectTokenError(await redeemCode(t.http, params, 'not-a-code', verifier), 'invalid_grant');

      const other = await createClient(t.app, { redirectUris: ['http://127.0.0.1/cb'], isPublic: true });
      const code = await obtainCode(t.http, params, human);
      const res = await redeemCode(t.http, { ...params, client_id: other.clientId }, code, verifier);
      expectTokenError(res, 'invalid_grant');
    });

    it('keeps a code to its own client: presented by another (a leaked code), it is refused there, neither spent nor revoking anything', async () => {
      const client = await createClient(t.app, { redirectUris: ['https://app.example/callback'] });
      const params = {
        response_type: 'code',
        client_id: client.clientId,
        redirect_uri: 'https://app.example/callback',
      };
      const own = { id: client.clientId, secret: client.clientSecret! };
      const form = (code: string) => ({ grant_type: 'authorization_code', code, redirect_uri: params.redirect_uri });
      // nilecli needs no secret: anyone can present a code as nilecli.
      const asNilecli = (code: string) => tokenRequest(t.http, { ...form(code), client_id: 'nilecli' });

      // Before its client redeemed it: refused, and still good for its client.
      const fresh = await obtainCode(t.http, params, human);
      const early = await asNilecli(fresh);
      expectTokenError(early, 'invalid_grant');
      expect(early.body.error_description).toBe('The authorization code was issued to another client');
      const granted = await tokenRequest(t.http, form(fresh), own).expect(200);

      // After: refused (not "already used"), and what it granted stays granted.
      const late = await asNilecli(fresh);
      expectTokenError(late, 'invalid_grant');
      expect(late.body.error_description).toBe('The authorization code was issued to another client');
      await tokenRequest(
        t.http,
        { grant_type: 'refresh_token', refresh_token: granted.body.refresh_token },
        own,
      ).expect(200);
    });

    it('lets a confidential client authenticate with Basic, PKCE optional', async () => {
      const client = await createClient(t.app, { redirectUris: ['https://app.example/callback'] });
      const params = {
        response_type: 'code',
        client_id: client.clientId,
        redirect_uri: 'https://app.example/callback',
        state: 'xyz',
      };
      await t.http.get('/authorize').query(params).expect(200);
      const code = await obtainCode(t.http, params, human);
      const form = { grant_type: 'authorization_code', code, redirect_uri: params.redirect_uri };
      const wrong = await tokenRequest(t.http, form, { id: client.clientId, secret: 'nope' });
      expectTokenError(wrong, 'invalid_client', 401);
      expect(wrong.body.errorCode).toBe('invalid_credentials');
      expect(wrong.headers['www-authenticate']).toMatch(/^Basic/);
      const res = await tokenRequest(t.http, form, { id: client.clientId, secret: client.clientSecret! }).expect(200);
      expect(res.body.refresh_token).toEqual(expect.any(String));
    });
  });

  describe('token endpoint errors', () => {
    it('answers each RFC 6749 error with its status and the service error fields', async () => {
      const cases: [Record<string, string>, string, number, string][] = [
        [{ client_id: 'nilecli' }, 'invalid_request', 400, 'invalid_request'],
        [{ grant_type: 'password', client_id: 'nilecli' }, 'unsupported_grant_type', 400, 'bad_request'],
        [{ grant_type: 'authorization_code', client_id: 'nilecli' }, 'invalid_request', 400, 'invalid_request'],
        [{ grant_type: 'refresh_token', client_id: 'nilecli' }, 'invalid_request', 400, 'invalid_request'],
        [{ grant_type: 'client_credentials', client_id: 'nilecli' }, 'unauthorized_client', 400, 'unauthorized_client'],
        [
          { grant_type: 'client_credentials', client_id: 'no-such-client' },
          'invalid_client',
          401,
          'invalid_credentials',
        ],
        [{ grant_type: 'client_credentials' }, 'invalid_client', 401, 'invalid_credentials'],
        [
          { grant_type: 'refresh_token', refresh_token: 'x', client_id: 'nilecli', scope: 'everything' },
          'invalid_scope',
          400,
          'bad_request',
        ],
      ];
      for (const [form, error, status, errorCode] of cases) {
        const res = await tokenRequest(t.http, form);
        expect({ form, status: res.status, error: res.body.error, errorCode: res.body.errorCode }).toEqual({
          form,
          status,
          error,
          errorCode,
        });
        expectTokenError(res, error, status);
      }
    });

    it('refuses a body that is not form-encoded, and repeated parameters', async () => {
      const json = await t.http.post('/oauth2/token').send({ grant_type: 'client_credentials', client_id: 'nilecli' });
      expectTokenError(json, 'invalid_request');
      const repeated = await t.http
        .post('/oauth2/token')
        .type('form')
        .send('grant_type=client_credentials&client_id=nilecli&client_id=nilecli');
      expectTokenError(repeated, 'invalid_request');
    });

    it('refuses two client authentication methods at once, and a secret for a public client', async () => {
      const client = await createClient(t.app, { redirectUris: ['https://app.example/callback'] });
      const both = await tokenRequest(
        t.http,
        { grant_type: 'client_credentials', client_secret: client.clientSecret! },
        { id: client.clientId, secret: client.clientSecret! },
      );
      expectTokenError(both, 'invalid_request');
      const publicWithSecret = await tokenRequest(t.http, {
        grant_type: 'refresh_token',
        refresh_token: 'x',
        client_id: 'nilecli',
        client_secret: 'guess',
      });
      expectTokenError(publicWithSecret, 'invalid_client', 401);
    });

    it('ignores unknown parameters (RFC 6749 §3.2)', async () => {
      const res = await tokenRequest(t.http, { grant_type: 'password', client_id: 'nilecli', foo: 'bar' });
      expectTokenError(res, 'unsupported_grant_type');
    });
  });
});
