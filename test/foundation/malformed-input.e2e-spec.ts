import { createDeveloperWithToken, createTestApp, TestApp } from '../support/test-app';

/**
 * Input that PostgreSQL or a validator cannot take (a NUL character, a lone UTF-16 surrogate)
 * is the caller's mistake: a clear 400 with the error body, never a 500.
 */
describe('malformed input never answers 500', () => {
  let t: TestApp;
  let auth: { Authorization: string };
  let slug: string;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_AUTH_PER_MINUTE: '100000' });
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (
      await t.http
        .post('/workspaces')
        .set(auth)
        .send({ name: `Malformed ${Date.now()}` })
        .expect(201)
    ).body.slug;
  });
  afterAll(() => t.close());

  const errorBody = (status: number) => ({
    errorCode: expect.any(String),
    message: expect.any(String),
    statusCode: status,
  });

  it('answers a NUL character in a JSON field with 400', async () => {
    const res = await t.http.post('/workspaces').set(auth).send({ name: 'a\u0000b' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ ...errorBody(400), errorCode: 'bad_request' });
  });

  it('answers a NUL character in a workspace slug with the same 403 as any unknown slug', async () => {
    const unknown = await t.http.get('/workspaces/no-such-workspace-anywhere').set(auth).expect(403);
    for (const path of ['/workspaces/%00', `/workspaces/${slug}%00/invites`]) {
      const res = await t.http.get(path).set(auth);
      expect({ path, status: res.status }).toEqual({ path, status: 403 });
      expect(res.body).toEqual(unknown.body);
    }
  });

  it('answers a lone surrogate in an e-mail field with 400', async () => {
    const res = await t.http
      .post(`/workspaces/${slug}/invites`)
      .set(auth)
      .set('Content-Type', 'application/json')
      .send('{"email":"ab\\ud800@example.com"}');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ ...errorBody(400), errorCode: 'bad_request' });
  });

  it('treats a client id with a NUL character as an unknown client (error page, invalid_client)', async () => {
    const page = await t.http.get('/authorize').query({ client_id: 'a\u0000b', redirect_uri: 'http://localhost/cb' });
    expect(page.status).toBe(400);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.headers.location).toBeUndefined();

    const form = await t.http
      .post('/oauth2/token')
      .type('form')
      .send({ grant_type: 'client_credentials', client_id: 'a\u0000' });
    expect(form.status).toBe(401);
    expect(form.body).toMatchObject({ error: 'invalid_client', errorCode: 'invalid_credentials', statusCode: 401 });

    const basic = await t.http
      .post('/oauth2/token')
      .set('Authorization', `Basic ${Buffer.from('a\u0000:secret').toString('base64')}`)
      .type('form')
      .send({ grant_type: 'client_credentials' });
    expect(basic.status).toBe(401);
    expect(basic.body).toMatchObject({ error: 'invalid_client', statusCode: 401 });
  });

  it('treats an e-mail with a NUL character on the login form as wrong credentials', async () => {
    const res = await t.http
      .post('/authorize')
      .type('form')
      .send({
        client_id: 'nilecli',
        redirect_uri: 'http://localhost:1234/callback',
        response_type: 'code',
        code_challenge: 'a'.repeat(43),
        code_challenge_method: 'S256',
        email: 'someone\u0000@example.com',
        password: 'whatever-it-is',
      });
    expect(res.status).toBe(401);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.headers.location).toBeUndefined();
  });
});
