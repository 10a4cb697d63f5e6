import { Test } from '@nestjs/testing';
import { randomBytes } from 'node:crypto';
import { AppConfig } from '../../src/config/app-config';
import { WorkerProbeServer } from '../../src/observability/worker-probe.server';
import { WorkerModule } from '../../src/worker.module';
import { itWithPromtool, promtoolProblems } from '../support/promtool';

/** Boots the worker's module graph in-process (as worker.ts does) on a free probe port. */
async function bootWorker(env: Record<string, string> = {}) {
  const overrides: Record<string, string> = {
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    QUEUE_PREFIX: `test-worker-${randomBytes(4).toString('hex')}`,
    RECONCILE_INTERVAL_SECONDS: '3600',
    RECONCILE_FIRST_PASS_SECONDS: '3600',
    DATABASE_POOL_TARGET: '0',
    WORKER_PORT: '0',
    ...env,
  };
  // The overrides go to this worker's configuration only; process.env is left alone.
  const worker = await Test.createTestingModule({ imports: [WorkerModule] })
    .overrideProvider(AppConfig)
    .useValue(AppConfig.fromEnvironment({ ...process.env, ...overrides }))
    .compile();
  await worker.init();
  const base = `http://127.0.0.1:${worker.get(WorkerProbeServer).port}`;
  return { worker, get: (path: string, init?: RequestInit) => fetch(`${base}${path}`, init) };
}

describe("the worker's probe port", () => {
  let booted: Awaited<ReturnType<typeof bootWorker>> | undefined;
  afterEach(async () => {
    await booted?.worker.close();
    booted = undefined;
  });

  it('answers /health/live and /health/ready with 200 when PostgreSQL and Redis answer', async () => {
    booted = await bootWorker();
    const live = await booted.get('/health/live');
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: 'ok' });
    const ready = await booted.get('/health/ready');
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      status: 'ok',
      info: { postgres: { status: 'up' }, redis: { status: 'up' } },
    });
  });

  it('answers /health/ready with 503 and the error body naming Redis when Redis does not answer', async () => {
    booted = await bootWorker({ REDIS_URL: 'redis://127.0.0.1:1' });
    const ready = await booted.get('/health/ready');
    expect(ready.status).toBe(503);
    expect(Number(ready.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await ready.json()).toEqual({
      errorCode: 'server_error',
      statusCode: 503,
      message: 'Not ready: redis not answering',
    });
    expect((await booted.get('/health/live')).status).toBe(200);
  });

  it('answers anything else with the error body', async () => {
    booted = await bootWorker();
    const unknown = await booted.get('/workspaces');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({
      errorCode: 'entity_not_found',
      statusCode: 404,
      message: 'No route for GET /workspaces',
    });
    const post = await booted.get('/health/live', { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  itWithPromtool('serves its own /metrics to the operator, a valid exposition', async () => {
    booted = await bootWorker({ OPERATOR_PASSWORD: 'operator-password-for-tests' });
    const anonymous = await booted.get('/metrics');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect(((await anonymous.json()) as { errorCode: string }).errorCode).toBe('invalid_credentials');
    const authorization = `Basic ${Buffer.from('operator:operator-password-for-tests').toString('base64')}`;
    const res = await booted.get('/metrics', { headers: { authorization } });
    expect(res.status).toBe(200);
    const exposition = await res.text();
    expect(exposition).toMatch(/^bull_queue_jobs\{queue="database-lifecycle",state="waiting"\} \d+$/m);
    expect(exposition).toMatch(/^metadata_pool_connections\{state="total"\} \d+$/m);
    expect(exposition).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(promtoolProblems(exposition)).toEqual({ status: 0, output: '' });
  });

  it('limits wrong operator credentials on /metrics per address: then 429 with Retry-After, right ones included', async () => {
    booted = await bootWorker({ OPERATOR_PASSWORD: 'operator-password-for-tests', RATE_LIMIT_AUTH_PER_MINUTE: '2' });
    const basic = (password: string) => ({
      headers: { authorization: `Basic ${Buffer.from(`operator:${password}`).toString('base64')}` },
    });
    expect((await booted.get('/metrics', basic('operator-password-for-tests'))).status).toBe(200);
    expect((await booted.get('/metrics', basic('guess-1'))).status).toBe(401);
    expect((await booted.get('/metrics', basic('guess-2'))).status).toBe(401);
    for (const password of ['guess-3', 'operator-password-for-tests']) {
      const res = await booted.get('/metrics', basic(password));
      expect(res.status).toBe(429);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(((await res.json()) as { errorCode: string }).errorCode).toBe('threshold_exceeded');
    }
  });

  it('does not serve /metrics without OPERATOR_PASSWORD', async () => {
    booted = await bootWorker({ OPERATOR_PASSWORD: '' });
    expect((await booted.get('/metrics')).status).toBe(404);
  });
});
