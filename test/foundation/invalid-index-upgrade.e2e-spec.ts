import { DataSource } from 'typeorm';
import { dataSourceOptions, ensureDatabaseExists, migrateDatabase } from '../../src/database/data-source-options';
import { MIGRATIONS } from '../../src/migrations';
import { UnbuiltByServer1795800000012 } from '../../src/migrations/1795800000012-UnbuiltByServer';
import { unique } from '../databases/support';
import { dropMetadataDatabase } from '../support/test-app';

const INDEX = 'IDX_databases_unbuilt_by_server';

describe('an install whose operator built an index beforehand and the build failed', () => {
  let url: string;
  afterAll(() => dropMetadataDatabase(url));

  it('gets the index built by the migration: the INVALID index a failed CREATE INDEX CONCURRENTLY left is not kept', async () => {
    const base = new URL(process.env.DATABASE_URL!);
    base.pathname = `${base.pathname}_invalid_index_${unique()}`;
    url = base.toString();
    await ensureDatabaseExists(url);
    const upTo = MIGRATIONS.indexOf(UnbuiltByServer1795800000012);
    expect(upTo).toBeGreaterThan(0);
    const previous = new DataSource({ ...dataSourceOptions(url, 1), migrations: MIGRATIONS.slice(0, upTo) });
    await previous.initialize();
    try {
      await previous.runMigrations({ transaction: 'each' });
      const [{ id: workspaceId }] = await previous.query<{ id: string }[]>(
        "INSERT INTO workspaces (name, slug) VALUES ('w', $1) RETURNING id",
        [`w-${unique()}`],
      );
      for (const name of [`a_${unique()}`, `b_${unique()}`]) {
        await previous.query(
          `INSERT INTO databases (workspace_id, name, region, status, physical_name)
           VALUES ($1, $2, 'AWS_US_WEST_2', 'REQUESTED', $2)`,
          [workspaceId, name],
        );
      }
      // A concurrent build under the migration's name that fails (here: not unique) leaves it INVALID.
      await expect(
        previous.query(`CREATE UNIQUE INDEX CONCURRENTLY "${INDEX}" ON "databases" ("region")`),
      ).rejects.toThrow();
      expect(
        await previous.query(`SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)`, [`"${INDEX}"`]),
      ).toEqual([{ indisvalid: false }]);
    } finally {
      await previous.destroy();
    }

    await migrateDatabase(url);
    const db = new DataSource(dataSourceOptions(url, 1));
    await db.initialize();
    try {
      const [index] = await db.query<{ indisvalid: boolean; definition: string }[]>(
        `SELECT i.indisvalid, pg_get_indexdef(i.indexrelid) AS definition
           FROM pg_index i WHERE i.indexrelid = to_regclass($1)`,
        [`"${INDEX}"`],
      );
      expect(index.indisvalid).toBe(true);
      expect(index.definition).toContain('(server_id, created, id)');
    } finally {
      await db.destroy();
    }
  });
});
