import type { Socket } from 'node:net';
import { createTestApp, TestApp } from '../support/test-app';

/** This process's open sockets to the run's Redis. */
function socketsToRedis(): number {
  const port = Number(new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379').port || 6379);
  const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
  return handles.filter((h) => (h as Partial<Socket>).remotePort === port && !(h as Socket).destroyed).length;
}

/** Several applications in one Node process, as the specs boot them. */
describe('Redis connections of applications in one process', () => {
  let apps: TestApp[] = [];
  afterEach(async () => {
    for (const app of apps) await app.close();
    apps = [];
  });

  it('an application shutting down leaves the other’s connections alone: the other stays ready', async () => {
    apps = [await createTestApp(), await createTestApp()];
    await apps.shift()!.close();
    const res = await apps[0].http.get('/health/ready').expect(200);
    expect(res.body).toMatchObject({ status: 'ok', info: { redis: { status: 'up' } } });
  });

  it('once both have shut down, none of their connections to Redis is left open', async () => {
    const before = socketsToRedis();
    const [a, b] = [await createTestApp(), await createTestApp()];
    expect(socketsToRedis()).toBeGreaterThan(before);
    await a.close();
    await b.close();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(socketsToRedis()).toBeLessThanOrEqual(before);
  });
});
