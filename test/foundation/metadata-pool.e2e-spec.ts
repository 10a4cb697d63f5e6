import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options';
import { metadataPool } from '../../src/database/hot-query';

/**
 * The metadata pool keeps its connections through an idle spell: when traffic resumes after a lull,
 * the same backends serve it, and no request waits for a new connection (and its backend's cold
 * caches) first.
 */
describe('the metadata connection pool', () => {
  it('serves traffic after an idle spell longer than the idle timeout from the connections it had', async () => {
    const options = dataSourceOptions(process.env.DATABASE_URL!, 3) as DataSourceOptions & { extra: object };
    // pg-pool's idle timeout (10 s by default) shortened so that the spell can be short.
    const dataSource = new DataSource({ ...options, extra: { ...options.extra, idleTimeoutMillis: 50 } });
    await dataSource.initialize();
    try {
      const pool = metadataPool(dataSource);
      // Three statements at once take three connections (each holds its own for 50 ms).
      const backends = async (): Promise<Set<number>> => {
        const rows = await Promise.all(
          [0, 1, 2].map(() =>
            dataSource.query<{ pid: number }[]>('SELECT pg_backend_pid() AS pid, pg_sleep(0.05)::text AS slept'),
          ),
        );
        return new Set(rows.map(([row]) => row.pid));
      };
      const before = await backends();
      expect(before.size).toBe(3);

      await sleep(400);

      expect(pool.totalCount).toBe(3);
      expect(pool.idleCount).toBe(3);
      expect(await backends()).toEqual(before);
    } finally {
      await dataSource.destroy();
    }
  });

  it('ends a session left waiting inside a transaction (idleInTransactionMs) and goes on without it', async () => {
    const dataSource = new DataSource(dataSourceOptions(process.env.DATABASE_URL!, 2, { idleInTransactionMs: 200 }));
    await dataSource.initialize();
    try {
      const runner = dataSource.createQueryRunner();
      await runner.connect();
      await runner.startTransaction();
      await runner.query("SELECT pg_advisory_xact_lock(hashtextextended('idle-in-transaction-spec', 0))");
      // The server's error arrives while no statement of the session runs (pg's client emits it as
      // an 'error' event, which would end the process if nothing listened).
      await sleep(500);
      // TypeORM's query runner hears it and lets the connection go.
      await expect(runner.query('SELECT 1')).rejects.toThrow('Query runner already released');
      // Its lock is gone with it, and the pool serves from its other connections.
      expect(
        await dataSource.query("SELECT pg_try_advisory_lock(hashtextextended('idle-in-transaction-spec', 0)) AS got"),
      ).toEqual([{ got: true }]);
      expect(await dataSource.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      await dataSource.destroy();
    }
  });
});
