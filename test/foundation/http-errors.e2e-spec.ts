import { createDeveloperWithToken, createTestApp, TestApp } from '../support/test-app';

describe('error bodies of the HTTP layer', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ BODY_LIMIT_BYTES: '2048' });
  });
  afterAll(() => t.close());

  it('answers an unknown route with 404 entity_not_found', async () => {
    const res = await t.http.get('/no/such/route').expect(404);
    expect(res.body).toEqual({
      errorCode: 'entity_not_found',
      message: 'No route for GET /no/such/route',
      statusCode: 404,
    });
  });

  it('answers a wrong method on a known path with 405 and Allow', async () => {
    const res = await t.http.delete('/health').expect(405);
    expect(res.body).toMatchObject({ errorCode: 'unsupported_operation', statusCode: 405 });
    expect(res.headers.allow).toBe('GET');
  });

  it('answers malformed JSON with 400 bad_request', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const res = await t.http
      .post('/workspaces')
      .set(auth)
      .set('Content-Type', 'application/json')
      .send('{"name": ')
      .expect(400);
    expect(res.body).toEqual({ errorCode: 'bad_request', message: 'Malformed JSON body', statusCode: 400 });
  });

  it('answers an oversized body with 413', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const res = await t.http
      .post('/workspaces')
      .set(auth)
      .send({ name: 'x'.repeat(5000) })
      .expect(413);
    expect(res.body).toEqual({ errorCode: 'bad_request', message: 'Request body is too large', statusCode: 413 });
  });

  it('answers a body failing validation with 400 naming the field', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const res = await t.http.post('/workspaces').set(auth).send({ name: '' }).expect(400);
    expect(res.body.errorCode).toBe('bad_request');
    expect(res.body.message).toMatch(/name/);
    const unknown = await t.http.post('/workspaces').set(auth).send({ name: 'ok', color: 'red' }).expect(400);
    expect(unknown.body.message).toMatch(/color/);
  });

  it('echoes a caller-supplied X-Request-Id and generates one otherwise', async () => {
    const given = await t.http.get('/health').set('X-Request-Id', 'trace-123').expect(200);
    expect(given.headers['x-request-id']).toBe('trace-123');
    const generated = await t.http.get('/health').expect(200);
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
