import { createPublicKey, JsonWebKey } from 'node:crypto';
import { decode, verify } from 'jsonwebtoken';
import * as oauth from 'oauth4webapi';
import { TestApp } from '../support/test-app';
import { createApiDeveloper, createHuman, Human, listeningApp } from './identity-support';

const insecure = { [oauth.allowInsecureRequests]: true };

/** What a browser does with the login page: submit every hidden field, plus e-mail and password. */
async function logInThroughPage(authorizationUrl: URL, human: Human): Promise<URL> {
  const page = await fetch(authorizationUrl);
  expect(page.status).toBe(200);
  const html = await page.text();
  const form = new URLSearchParams();
  for (const [, name, value] of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    form.set(
      name,
      value
        .replace(/&quot;/g, '"')
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>')
        .replace(/&amp;/g, '&'),
    );
  }
  form.set('email', human.email);
  form.set('password', human.password);
  // As a browser does: no action (or an empty one) posts to the page's own URL.
  const action = /<form method="post"(?: action="([^"]*)")?>/.exec(html)![1] ?? '';
  const submitted = await fetch(new URL(action, authorizationUrl), { method: 'POST', body: form, redirect: 'manual' });
  expect(submitted.status).toBe(302);
  return new URL(submitted.headers.get('location')!);
}

describe('a standard OAuth client library (oauth4webapi) against the running app', () => {
  let t: TestApp & { baseUrl: string };
  let human: Human;
  let as: oauth.AuthorizationServer;
  beforeAll(async () => {
    t = await listeningApp();
    human = await createHuman(t.app, 'library');
    const issuer = new URL(t.baseUrl);
    as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
    );
  });
  afterAll(() => t.close());

  it('discovers the server metadata (RFC 8414) and the JWKS', async () => {
    expect(as).toMatchObject({
      issuer: t.baseUrl,
      authorization_endpoint: `${t.baseUrl}/authorize`,
      token_endpoint: `${t.baseUrl}/oauth2/token`,
      jwks_uri: `${t.baseUrl}/.well-known/jwks.json`,
      response_types_supported: ['code'],
      grant_types_supported: expect.arrayContaining(['authorization_code', 'refresh_token', 'client_credentials']),
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: expect.arrayContaining(['client_secret_basic', 'none']),
    });
    const jwks = (await (await fetch(as.jwks_uri!)).json()) as { keys: Record<string, string>[] };
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig', kid: expect.any(String) });
    expect(jwks.keys[0]).not.toHaveProperty('d');
    expect(jwks.keys[0]).not.toHaveProperty('p');
  });

  it('completes the code flow with PKCE as nilecli, then refreshes, and verifies tokens with the JWKS', async () => {
    const client: oauth.Client = { client_id: 'nilecli' };
    const redirectUri = 'http://localhost:48123/callback';
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const authorizationUrl = new URL(as.authorization_endpoint!);
    authorizationUrl.search = new URLSearchParams({
      client_id: client.client_id,
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: 'workspaces databases query',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    }).toString();

    const callback = await logInThroughPage(authorizationUrl, human);
    expect(`${callback.origin}${callback.pathname}`).toBe('http://localhost:48123/callback');
    const params = oauth.validateAuthResponse(as, client, callback, state);

    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, verifier, insecure),
    );
    expect(tokens.token_type).toBe('bearer'); // normalised to lower case by the library
    expect(tokens.refresh_token).toEqual(expect.any(String));
    expect(tokens.scope).toBe('workspaces databases query');

    // Verify the access token with the published key, as a resource server would.
    const jwks = (await (await fetch(as.jwks_uri!)).json()) as { keys: (JsonWebKey & { kid: string })[] };
    const kid = decode(tokens.access_token, { complete: true })!.header.kid;
    const jwk = jwks.keys.find((k) => k.kid === kid)!;
    const claims = verify(tokens.access_token, createPublicKey({ key: jwk, format: 'jwk' }), {
      algorithms: ['RS256'],
      issuer: as.issuer,
      audience: 'control-plane',
    }) as Record<string, unknown>;
    expect(claims.sub).toBe(human.id);

    const me = await fetch(`${t.baseUrl}/developers/me`, {
      headers: { Authorization: `Bearer ${tokens.access_token}` },
    });
    expect(await me.json()).toMatchObject({ id: human.id, kind: 'HUMAN' });

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure),
    );
    expect(refreshed.refresh_token).toEqual(expect.any(String));
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);

    // The library surfaces the RFC 6749 error of a replayed code.
    await expect(
      oauth.processAuthorizationCodeResponse(
        as,
        client,
        await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, verifier, insecure),
      ),
    ).rejects.toMatchObject({ error: 'invalid_grant', status: 400 });
  });

  it('gets client_credentials tokens for an API developer with client_secret_basic', async () => {
    const api = await createApiDeveloper(t.app);
    const client: oauth.Client = { client_id: api.clientId };
    const tokens = await oauth.processClientCredentialsResponse(
      as,
      client,
      await oauth.clientCredentialsGrantRequest(
        as,
        client,
        oauth.ClientSecretBasic(api.clientSecret),
        new URLSearchParams(),
        insecure,
      ),
    );
    expect(tokens.refresh_token).toBeUndefined();
    const me = await fetch(`${t.baseUrl}/developers/me`, {
      headers: { Authorization: `Bearer ${tokens.access_token}` },
    });
    expect(await me.json()).toMatchObject({ id: api.id, kind: 'API' });

    // A 401 carries a Basic challenge, which the library reports with the response.
    const failure = await oauth
      .processClientCredentialsResponse(
        as,
        client,
        await oauth.clientCredentialsGrantRequest(
          as,
          client,
          oauth.ClientSecretBasic('wrong'),
          new URLSearchParams(),
          insecure,
        ),
      )
      .catch((err: unknown) => err as oauth.WWWAuthenticateChallengeError);
    expect(failure).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    expect(failure).toMatchObject({ status: 401, cause: [expect.objectContaining({ scheme: 'basic' })] });
    expect(await (failure as oauth.WWWAuthenticateChallengeError).response.json()).toMatchObject({
      error: 'invalid_client',
      errorCode: 'invalid_credentials',
    });
  });
});
