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
});
