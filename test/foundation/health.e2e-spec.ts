import { createTestApp, TestApp } from '../support/test-app';

describe('health probes', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  describe('when PostgreSQL and Redis answer', () => {
    it('GET /health and GET /health/ready answer 200 naming both as up', async () => {
      t = await createTestApp();
      for (const path of ['/health', '/health/ready']) {
        const res = await t.http.get(path).expect(200);
        expect(res.body).toMatchObject({ status: 'ok', info: { postgres: { status: 'up' }, redis: { status: 'up' } } });
      }
    });

    it('GET /health/live answers 200', async () => {
      t = await createTestApp();
      const res = await t.http.get('/health/live').expect(200);
      expect(res.body).toEqual({ status: 'ok' });
    });
  });

  describe('when Redis does not answer', () => {
    it('GET /health and GET /health/ready answer 503 with the one error body naming Redis, and Retry-After', async () => {
      t = await createTestApp({ REDIS_URL: 'redis://127.0.0.1:1' });
      for (const path of ['/health', '/health/ready']) {
        const res = await t.http.get(path).expect(503);
        // Exactly the error body: no terminus status/info/error/details beside it.
        expect(res.body).toEqual({
          errorCode: 'server_error',
          statusCode: 503,
          message: 'Not ready: redis not answering',
        });
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      }
    });

    it('GET /health/live still answers 200 (the process is up; restarting it would not help)', async () => {
      t = await createTestApp({ REDIS_URL: 'redis://127.0.0.1:1' });
      const res = await t.http.get('/health/live').expect(200);
      expect(res.body).toEqual({ status: 'ok' });
    });
  });

  describe('when the metadata PostgreSQL does not answer', () => {
    it('GET /health/ready answers 503 naming postgres', async () => {
      t = await createTestApp();
      // The app is up; its pool now points nowhere (as when the server goes away).
      await t.dataSource.destroy();
      const res = await t.http.get('/health/ready').expect(503);
      expect(res.body).toEqual({
        errorCode: 'server_error',
        statusCode: 503,
        message: 'Not ready: postgres not answering',
      });
    });
  });
});
