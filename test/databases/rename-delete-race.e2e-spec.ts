import { DatabaseEntity } from '../../src/databases/database.entity';
import { createReadyDatabase, createWorkspace, unique } from './support';
import { createDeveloperWithToken, createTestApp, TestApp } from '../support/test-app';

/**
 * A rename and a delete of one database sent at once end as one of the two serial orders:
 * rename then delete (the delete finds nothing by the old name: 404) or delete then rename (the
 * rename is refused: 409 db_status_failure). Never both 200.
 */
describe('a rename racing a delete of the same database', () => {
  let t: TestApp;
  let auth: { Authorization: string };
  let slug: string;
  beforeAll(async () => {
    t = await createTestApp({ DATABASE_POOL_TARGET: '3', DATABASE_DELETION_GRACE_SECONDS: '3600' });
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
  });
  afterAll(() => t.close());

  it('always ends in one of the serial outcomes, and every answer agrees with it', async () => {
    const outcomes = new Set<string>();
    for (let round = 0; round < 12; round++) {
      const name = `rn_${unique()}`;
      const { id } = await createReadyDatabase(t, auth, slug, name);
      const [renamed, deleted] = await Promise.all([
        t.http
          .put(`/workspaces/${slug}/databases/${name}`)
          .set(auth)
          .send({ name: `${name}_new` }),
        t.http.delete(`/workspaces/${slug}/databases/${name}`).set(auth),
      ]);
      const row = await t.dataSource.getRepository(DatabaseEntity).findOneByOrFail({ id });
      if (renamed.status === 200) {
        // rename first, then the delete by the old name found nothing
        expect({ round, delete: deleted.status, body: deleted.body.errorCode }).toEqual({
          round,
          delete: 404,
          body: 'entity_not_found',
        });
        expect(row).toMatchObject({ name: `${name}_new`, deleted: null });
        outcomes.add('rename first');
      } else {
        // delete first, then the rename of a database queued for deletion was refused
        expect({ round, rename: renamed.status, body: renamed.body.errorCode }).toEqual({
          round,
          rename: 409,
          body: 'db_status_failure',
        });
        expect(deleted.status).toBe(200);
        expect(deleted.body.name).toBe(name);
        expect(row.name).toBe(name);
        expect(row.deleted).toBeInstanceOf(Date);
        outcomes.add('delete first');
      }
    }
    expect(outcomes.size).toBeGreaterThan(0);
  });

  it('lets two renames of one database race to one winner; the other finds nothing by the old name', async () => {
    for (let round = 0; round < 6; round++) {
      const name = `rr_${unique()}`;
      const { id } = await createReadyDatabase(t, auth, slug, name);
      const answers = await Promise.all(
        ['a', 'b'].map((suffix) =>
          t.http
            .put(`/workspaces/${slug}/databases/${name}`)
            .set(auth)
            .send({ name: `${name}_${suffix}` }),
        ),
      );
      const statuses = answers.map((a) => a.status).sort();
      expect({ round, statuses }).toEqual({ round, statuses: [200, 404] });
      const winner = answers.find((a) => a.status === 200)!;
      const row = await t.dataSource.getRepository(DatabaseEntity).findOneByOrFail({ id });
      expect(row.name).toBe(winner.body.name);
    }
  });
});
