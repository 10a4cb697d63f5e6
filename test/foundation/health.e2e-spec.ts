import { createTestApp, TestApp } from '../support/test-app';

describe('GET /health', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('answers 200 when PostgreSQL and Redis answer', async () => {
    t = await createTestApp();
    const res = await t.http.get('/health').expect(200);
    expect(res.body).toMatchObject({ status: 'ok', info: { postgres: { status: 'up' }, redis: { status: 'up' } } });
  });

  it('answers 503 naming Redis when Redis does not answer', async () => {
    t = await createTestApp({ REDIS_URL: 'redis://127.0.0.1:1' });
    const res = await t.http.get('/health').expect(503);
    expect(res.body).toMatchObject({ errorCode: 'server_error', statusCode: 503, down: ['redis'] });
    expect(res.body.message).toContain('redis');
    expect(res.body.details.postgres.status).toBe('up');
  });
});
