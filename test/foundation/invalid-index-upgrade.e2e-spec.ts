import { UnbuiltByServer1795800000012 } from '../../src/migrations/1795800000012-UnbuiltByServer';
import { unique } from '../databases/support';
import { dropMetadataDatabase } from '../support/test-app';
import { installBefore, upgraded, upgradeSpecUrl } from '../support/upgrade';

const INDEX = 'IDX_databases_unbuilt_by_server';

describe('an install whose operator built an index beforehand and the build failed', () => {
  let url: string;
  afterAll(() => dropMetadataDatabase(url));

  it('gets the index built by the migration: the INVALID index a failed CREATE INDEX CONCURRENTLY left is not kept', async () => {
    url = upgradeSpecUrl('invalid_index');
    const previous = await installBefore(url, UnbuiltByServer1795800000012);
    try {
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

    const db = await upgraded(url);
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
