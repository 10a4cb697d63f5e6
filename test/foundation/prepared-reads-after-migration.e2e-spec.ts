import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options';
import { readRows } from '../../src/database/hot-query';

/**
 * The hot reads are named statements each pooled connection keeps prepared. A migration run by
 * another process (a newer replica booting in a rolling upgrade, the CLI) that changes a column
 * they return makes every run of them on a connection that prepared them before fail with 0A000
 * "cached plan must not change result type". No request may pay for that with a 500.
 */
describe('prepared hot reads across a migration that changes what they return', () => {
  const table = `prepared_reads_${Date.now()}`;
  let dataSource: DataSource;
  beforeAll(async () => {
    dataSource = new DataSource(dataSourceOptions(process.env.DATABASE_URL!, 2));
    await dataSource.initialize();
    await dataSource.query(`CREATE TABLE ${table} (email varchar(10))`);
    await dataSource.query(`INSERT INTO ${table} VALUES ('a@b.c')`);
  });
  afterAll(async () => {
    await dataSource.query(`DROP TABLE IF EXISTS ${table}`);
    await dataSource.destroy();
  });

  it('answers every read after the change, however many connections had it prepared', async () => {
    const read = {
      name: `${table}_read`,
      text: `SELECT email, pg_backend_pid() AS pid, pg_sleep(0.05)::text AS s FROM ${table}`,
    };
    const run = () => readRows<{ email: string; pid: number }>(dataSource, read, []);
    // Both connections prepare it (two reads at once take both).
    const before = new Set((await Promise.all([run(), run()])).map(([row]) => row.pid));
    expect(before.size).toBe(2);

    await dataSource.query(`ALTER TABLE ${table} ALTER COLUMN email TYPE varchar(400)`);

    const after = await Promise.all([run(), run(), run(), run()]);
    expect(after.map(([row]) => row.email)).toEqual(['a@b.c', 'a@b.c', 'a@b.c', 'a@b.c']);
    // Each connection that had prepared it was let go (PostgreSQL never plans it again on them).
    for (const [row] of after) expect(before.has(row.pid)).toBe(false);
  });
});
