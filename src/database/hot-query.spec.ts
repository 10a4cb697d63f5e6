import { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import { type PreparedRead, readRows } from './hot-query';

describe('hot reads on the metadata pool', () => {
  // One connection, so the session asked about its prepared statements is the one that ran them.
  let pool: Pool;
  let dataSource: DataSource;

  beforeAll(() => {
    pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 1 });
    dataSource = { driver: { master: pool } } as unknown as DataSource;
  });

  afterAll(() => pool.end());

  const prepared = async () =>
    (await pool.query<{ name: string; statement: string }>('SELECT name, statement FROM pg_prepared_statements')).rows;

  it('a PreparedRead is prepared once on the connection and answers every time', async () => {
    const read: PreparedRead = { name: 'hot_query_spec_sum', text: 'SELECT $1::int + $2::int AS sum' };
    expect(await readRows(dataSource, read, [1, 2])).toEqual([{ sum: 3 }]);
    expect(await readRows(dataSource, read, [20, 22])).toEqual([{ sum: 42 }]);
    expect(await prepared()).toEqual([{ name: 'hot_query_spec_sum', statement: read.text }]);
  });

  it('a plain statement is not kept prepared', async () => {
    const before = await prepared();
    expect(await readRows(dataSource, 'SELECT $1::text AS echo', ['x'])).toEqual([{ echo: 'x' }]);
    expect(await prepared()).toEqual(before);
  });
});
