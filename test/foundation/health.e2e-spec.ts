import { spawn } from 'node:child_process';
import { once } from 'node:events';
import Redis from 'ioredis';
import { freePort } from '../support/free-port';
import { createOwnDatabase, dropOwnDatabase, withAdmin } from '../support/own-database';
import { createTestApp, eventually, TestApp } from '../support/test-app';

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

  describe('when Redis answers but refuses writes (a read-only replica, say)', () => {
    it('GET /health/ready answers 503 naming Redis as refusing writes: no queue could take a job there', async () => {
      // A Redis of this spec's own, a replica of a master that does not exist: it answers PING and
      // reads, and refuses every write with READONLY.
      const port = await freePort();
      const replica = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--save',
          '',
          '--appendonly',
          'no',
          '--replicaof',
          '127.0.0.1',
          '1',
        ],
        { stdio: 'ignore' },
      );
      const client = new Redis({
        port,
        host: '127.0.0.1',
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        retryStrategy: () => 50,
      });
      try {
        await eventually(async () => (await client.ping().catch(() => '')) === 'PONG', 10000);
        await expect(client.set('k', 'v')).rejects.toThrow(/READONLY/);
        t = await createTestApp({ REDIS_URL: `redis://127.0.0.1:${port}`, WORKERS: 'off' });
        const res = await t.http.get('/health/ready').expect(503);
        expect(res.body).toEqual({
          errorCode: 'server_error',
          statusCode: 503,
          message: 'Not ready: redis refusing writes',
        });
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
        // Made a master again, it takes writes, and the process is ready again.
        await client.replicaof('NO', 'ONE');
        await t.http.get('/health/ready').expect(200);
      } finally {
        client.disconnect();
        const exited = once(replica, 'exit');
        replica.kill();
        await exited;
      }
    });
  });

  describe('when the metadata PostgreSQL does not answer', () => {
    it('GET /health/ready answers 503 naming postgres, and 200 again once it answers', async () => {
      // A database of its own refusing connections (the run's shared one serves other specs).
      const databaseUrl = await createOwnDatabase('ready');
      const name = new URL(databaseUrl).pathname.slice(1);
      const allow = (allowed: boolean) =>
        withAdmin(async (admin) => {
          await admin.query(`ALTER DATABASE ${admin.escapeIdentifier(name)} ALLOW_CONNECTIONS ${allowed}`);
          if (!allowed)
            await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
        });
      try {
        t = await createTestApp({ DATABASE_URL: databaseUrl, DATABASE_POOL_TARGET: '0' });
        await t.http.get('/health/ready').expect(200);
        await allow(false);
        const res = await t.http.get('/health/ready').expect(503);
        expect(res.body).toEqual({
          errorCode: 'server_error',
          statusCode: 503,
          message: 'Not ready: postgres not answering',
        });
        await allow(true);
        await eventually(async () => (await t!.http.get('/health/ready')).status === 200, 10000);
      } finally {
        await allow(true).catch(() => undefined);
        await t?.close();
        t = undefined;
        await dropOwnDatabase(databaseUrl);
      }
    });
  });

  describe("when this process's own metadata pool is busy", () => {
    it('GET /health/ready answers 200: PostgreSQL answers, so the replica stays in rotation through a load spike', async () => {
      t = await createTestApp({ DATABASE_POOL_SIZE: '2', WORKERS: 'off' });
      // Every pooled connection held for 3 s, longer than the probe waits (1.5 s).
      const held = [0, 1].map(() => t!.dataSource.query('SELECT pg_sleep(3)'));
      try {
        await new Promise((r) => setTimeout(r, 200));
        const res = await t.http.get('/health/ready').expect(200);
        expect(res.body).toMatchObject({ status: 'ok', info: { postgres: { status: 'up' } } });
      } finally {
        await Promise.all(held);
      }
    });
  });
});
