import { ComputeChanges1795800000011 } from '../../src/migrations/1795800000011-ComputeChanges';
import { unique } from '../databases/support';
import { dropMetadataDatabase } from '../support/test-app';
import { installBefore, revertBefore, upgraded, upgradeSpecUrl } from '../support/upgrade';

describe('an install from before the compute changes limit', () => {
  let url: string;
  afterAll(() => dropMetadataDatabase(url));

  it('brings in its last day: the instances created and the changes of size applied within it count, older ones and first periods not', async () => {
    url = upgradeSpecUrl('compute_changes');
    const previous = await installBefore(url, ComputeChanges1795800000011);

    const [{ id: workspaceId }] = await previous.query<{ id: string }[]>(
      "INSERT INTO workspaces (name, slug) VALUES ('w', $1) RETURNING id",
      [`w-${unique()}`],
    );
    const database = async (): Promise<string> => {
      const [row] = await previous.query<{ id: string }[]>(
        `INSERT INTO databases (workspace_id, name, region, status, physical_name)
         VALUES ($1, $2, 'AWS_US_WEST_2', 'READY', $2) RETURNING id`,
        [workspaceId, `db_${unique()}`],
      );
      return row.id;
    };
    const instance = async (databaseId: string, hoursAgo: number): Promise<string> => {
      const [row] = await previous.query<{ id: string }[]>(
        `INSERT INTO compute_instances (database_id, name, instance_type_id, desired_instance_type_id, status, created)
         VALUES ($1, 'ci', 'dc-small', 'dc-small', 'READY', now() - make_interval(hours => $2)) RETURNING id`,
        [databaseId, hoursAgo],
      );
      return row.id;
    };
    const period = (instanceId: string, databaseId: string, startedHoursAgo: number, endedHoursAgo: number | null) =>
      previous.query(
        `INSERT INTO compute_usage_periods
           (instance_id, database_id, workspace_id, instance_type_id, compute_size, vcpus, hourly_cost, started_at, ended_at)
         VALUES ($1, $2, $3, 'dc-small', 'small', 2, 0.1, now() - make_interval(hours => $4),
                 now() - make_interval(hours => $5))`,
        [instanceId, databaseId, workspaceId, startedHoursAgo, endedHoursAgo],
      );

    const busy = await database();
    // Created two days ago, resized 30 hours ago and 2 hours ago: one change within the day.
    const old = await instance(busy, 48);
    await period(old, busy, 47, 30);
    await period(old, busy, 30, 2);
    await period(old, busy, 2, null);
    // Created 3 hours ago and READY since (its first period is its create, not a change of size).
    const recent = await instance(busy, 3);
    await period(recent, busy, 3, null);
    const quiet = await database();
    await period(await instance(quiet, 72), quiet, 71, null);
    await previous.destroy();

    const db = await upgraded(url);
    try {
      const counts = async () =>
        Object.fromEntries(
          (
            await db.query<{ database_id: string; n: string }[]>(
              'SELECT database_id, count(*) AS n FROM compute_changes GROUP BY database_id',
            )
          ).map((r) => [r.database_id, Number(r.n)]),
        );
      // The resize 2 hours ago and the create 3 hours ago.
      expect(await counts()).toEqual({ [busy]: 2 });

      await revertBefore(db, ComputeChanges1795800000011);
      expect(await db.query("SELECT to_regclass('compute_changes') AS t")).toEqual([{ t: null }]);
    } finally {
      await db.destroy();
    }
  });
});
