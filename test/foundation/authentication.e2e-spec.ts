import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { sign } from 'jsonwebtoken';
import { AccessTokens } from '../../src/auth/access-tokens';
import { AppConfig } from '../../src/config/app-config';
import { createDeveloperWithToken, createTestApp, TestApp } from '../support/test-app';

const ERROR_401 = { errorCode: 'invalid_credentials', statusCode: 401 };

describe('bearer-token authentication', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('accepts a valid token and identifies the developer', async () => {
    const { developer, auth } = await createDeveloperWithToken(t.app);
    const res = await t.http.get('/developers/me').set(auth).expect(200);
    expect(res.body).toEqual({
      id: developer.id,
      email: developer.email,
      kind: 'HUMAN',
      workspaces: [],
      databases: [],
    });
  });

  it('rejects a request without a token', async () => {
    const res = await t.http.get('/developers/me').expect(401);
    expect(res.body).toMatchObject(ERROR_401);
    expect(res.headers['content-type']).toMatch(/application\/json/);
  });

  it('rejects a malformed token', async () => {
    const res = await t.http.get('/developers/me').set('Authorization', 'Bearer not.a.jwt').expect(401);
    expect(res.body).toMatchObject(ERROR_401);
  });

  it('rejects a token signed by another key', async () => {
    const { developer } = await createDeveloperWithToken(t.app);
    const config = t.app.get(AppConfig);
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const forged = sign({ scope: '' }, privateKey, {
      algorithm: 'RS256',
      subject: developer.id,
      issuer: config.env.JWT_ISSUER,
      audience: config.env.JWT_AUDIENCE,
      expiresIn: 600,
    });
    const res = await t.http.get('/developers/me').set('Authorization', `Bearer ${forged}`).expect(401);
    expect(res.body).toMatchObject(ERROR_401);
  });

  it('rejects an expired token', async () => {
    const { developer } = await createDeveloperWithToken(t.app);
    const expired = t.app.get(AccessTokens).issue({ sub: developer.id, scope: '' }, -10).access_token;
    const res = await t.http.get('/developers/me').set('Authorization', `Bearer ${expired}`).expect(401);
    expect(res.body).toMatchObject({ ...ERROR_401, message: 'Access token expired' });
  });

  it('rejects a token for a deleted developer', async () => {
    const { developer, auth } = await createDeveloperWithToken(t.app);
    await t.dataSource.query('UPDATE developers SET deleted = now() WHERE id = $1', [developer.id]);
    await t.http.get('/developers/me').set(auth).expect(401);
  });

  describe('a token verified before (its verification is remembered)', () => {
    async function memberOfAWorkspace() {
      const dev = await createDeveloperWithToken(t.app);
      const name = `Remembered ${dev.developer.id.slice(0, 8)}`;
      const ws = await t.http.post('/workspaces').set(dev.auth).send({ name }).expect(201);
      await t.http.get('/developers/me').set(dev.auth).expect(200);
      await t.http.get(`/workspaces/${ws.body.slug}/databases`).set(dev.auth).expect(200);
      return { ...dev, slug: ws.body.slug as string, workspaceId: ws.body.id as string };
    }

    it('loses access at once when its developer is deleted, on every kind of route', async () => {
      const { developer, auth, slug } = await memberOfAWorkspace();
      await t.http.get('/workspaces').set(auth).expect(200);
      await t.dataSource.query('UPDATE developers SET deleted = now() WHERE id = $1', [developer.id]);
      // Its own profile, workspace routes (with and without a database) and routes without a workspace.
      const requests = [
        () => t.http.get('/developers/me'),
        () => t.http.get(`/workspaces/${slug}/databases`),
        () => t.http.get(`/workspaces/${slug}/databases/nope`),
        () => t.http.get('/workspaces'),
        () => t.http.post('/workspaces').send({ name: `After deletion ${developer.id.slice(0, 8)}` }),
        () => t.http.get(`/databases/${randomUUID()}`),
      ];
      for (const request of requests) {
        const res = await request().set(auth).expect(401);
        expect(res.body).toMatchObject(ERROR_401);
        // RFC 6750 §3.1: a token was presented, and it is no good.
        expect(res.headers['www-authenticate']).toBe(
          'Bearer error="invalid_token", error_description="Missing, invalid or expired bearer token"',
        );
      }
      // Without a token, the challenge alone (no error code: the request had no authentication).
      const missing = await t.http.get('/developers/me').expect(401);
      expect(missing.headers['www-authenticate']).toBe('Bearer');
      // The refused create made no workspace: the developer is still a member of its first one only.
      const memberships = await t.dataSource.query('SELECT 1 FROM workspace_members WHERE developer_id = $1', [
        developer.id,
      ]);
      expect(memberships).toHaveLength(1);
    });

    it('loses a workspace at once when its developer leaves it', async () => {
      const { developer, auth, slug, workspaceId } = await memberOfAWorkspace();
      await t.dataSource.query('DELETE FROM workspace_members WHERE workspace_id = $1 AND developer_id = $2', [
        workspaceId,
        developer.id,
      ]);
      const res = await t.http.get(`/workspaces/${slug}/databases`).set(auth).expect(403);
      expect(res.body).toMatchObject({ errorCode: 'unauthorized_workspace_access', statusCode: 403 });
      await t.http.get('/developers/me').set(auth).expect(200);
    });

    it('is refused once it expires', async () => {
      const { developer } = await createDeveloperWithToken(t.app);
      const token = t.app.get(AccessTokens).issue({ sub: developer.id, scope: '' }, 2).access_token;
      await t.http.get('/developers/me').set('Authorization', `Bearer ${token}`).expect(200);
      await new Promise((resolve) => setTimeout(resolve, 2_100));
      const res = await t.http.get('/developers/me').set('Authorization', `Bearer ${token}`).expect(401);
      expect(res.body).toMatchObject({ ...ERROR_401, message: 'Access token expired' });
    });

    it('does not vouch for the same claims with another signature', async () => {
      const { auth } = await createDeveloperWithToken(t.app);
      await t.http.get('/developers/me').set(auth).expect(200);
      const [header, payload, signature] = auth.Authorization.slice('Bearer '.length).split('.');
      const tampered = `${header}.${payload}.${signature.slice(0, -4)}${signature.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
      await t.http.get('/developers/me').set('Authorization', `Bearer ${tampered}`).expect(401);
    });
  });
});
