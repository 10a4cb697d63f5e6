import { generateKeyPairSync } from 'node:crypto';
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
});
