import { BillingEndAndAmountPrecision1795800000005 } from '../../src/migrations/1795800000005-BillingEndAndAmountPrecision';
import { unique } from '../databases/support';
import { dropMetadataDatabase } from '../support/test-app';
import { installBefore, upgraded, upgradeSpecUrl } from '../support/upgrade';

describe('an install from before the billing corrections (open periods of deleted instances, amounts under 10^8 USD)', () => {
  let url: string;
  afterAll(() => dropMetadataDatabase(url));

  it('closes the open periods of deleted instances when their delete was accepted (or their database due), and touches nothing else', async () => {
    url = upgradeSpecUrl('billing_end');
    const previous = await installBefore(url, BillingEndAndAmountPrecision1795800000005);

    const at = (iso: string) => new Date(`2026-03-10T${iso}Z`);
    const [{ id: workspaceId }] = await previous.query<{ id: string }[]>(
      "INSERT INTO workspaces (name, slug) VALUES ('w', $1) RETURNING id",
      [`w-${unique()}`],
    );
    const database = async (deleted: Date | null, due: Date | null): Promise<string> => {
      const [row] = await previous.query<{ id: string }[]>(
        `INSERT INTO databases (workspace_id, name, region, status, physical_name, deleted, deletion_due_at)
         VALUES ($1, $2, 'AWS_US_WEST_2', 'READY', $2, $3, $4) RETURNING id`,
        [workspaceId, `db_${unique()}`, deleted, due],
      );
      return row.id;
    };
    const instance = async (databaseId: string, deleted: Date | null, terminated: Date | null): Promise<string> => {
      const status = terminated ? 'TERMINATED' : deleted ? 'DELETING' : 'READY';
      const [row] = await previous.query<{ id: string }[]>(
        `INSERT INTO compute_instances (database_id, name, instance_type_id, desired_instance_type_id, status, deleted, terminated)
         VALUES ($1, 'ci', 'dc-small', 'dc-small', $2, $3, $4) RETURNING id`,
        [databaseId, status, deleted, terminated],
      );
      return row.id;
    };
    const period = async (instanceId: string, databaseId: string, started: Date, ended: Date | null) => {
      const [row] = await previous.query<{ id: string }[]>(
        `INSERT INTO compute_usage_periods
           (instance_id, database_id, workspace_id, instance_type_id, compute_size, vcpus, hourly_cost, started_at, ended_at)
         VALUES ($1, $2, $3, 'dc-small', 'small', 2, 0.1, $4, $5) RETURNING id`,
        [instanceId, databaseId, workspaceId, started, ended],
      );
      return row.id;
    };

    const live = await database(null, null);
    // Deleted at 09:00, its termination still waiting for the data plane.
    const waiting = await instance(live, at('09:00:00.000'), null);
    const waitingPeriod = await period(waiting, live, at('06:00:00.000'), null);
    // Its period began after the recorded delete (two processes' clocks): ends as it starts.
    const skewed = await instance(live, at('09:00:00.000'), null);
    const skewedPeriod = await period(skewed, live, at('09:00:00.250'), null);
    // Running: untouched.
    const running = await instance(live, null, null);
    const runningPeriod = await period(running, live, at('06:00:00.000'), null);
    // Terminated long ago, closed at its termination: history, untouched.
    const old = await instance(live, at('01:00:00.000'), at('01:30:00.000'));
    const oldPeriod = await period(old, live, at('00:00:00.000'), at('01:30:00.000'));
    // A database deleted at 07:00, due at 08:00; one instance deleted after that (at 09:00).
    const deletedDb = await database(at('07:00:00.000'), at('08:00:00.000'));
    const late = await instance(deletedDb, at('09:00:00.000'), null);
    const latePeriod = await period(late, deletedDb, at('06:00:00.000'), null);
    // Another still running there: left open (its finalization ends it when due).
    const queued = await instance(deletedDb, null, null);
    const queuedPeriod = await period(queued, deletedDb, at('06:00:00.000'), null);
    // A rated line at the most the old amount column held.
    await previous.query(
      `INSERT INTO billing_rated_lines (workspace_id, ym, component, source_id, quantity, unit, unit_price, amount)
       VALUES ($1, '2026-03', 'compute', $2, 744, 'instance-hour', 134408.6021, 99999999.999999)`,
      [workspaceId, oldPeriod],
    );
    await previous.destroy();

    const db = await upgraded(url);
    try {
      const rows = await db.query<{ id: string; ended_at: Date | null }[]>(
        'SELECT id, ended_at FROM compute_usage_periods',
      );
      expect(Object.fromEntries(rows.map((r) => [r.id, r.ended_at]))).toEqual({
        [waitingPeriod]: at('09:00:00.000'),
        [skewedPeriod]: at('09:00:00.250'),
        [runningPeriod]: null,
        [oldPeriod]: at('01:30:00.000'),
        [latePeriod]: at('08:00:00.000'),
        [queuedPeriod]: null,
      });
      // The amounts are kept as they were, and the column now holds far larger ones.
      await db.query(
        `INSERT INTO billing_rated_lines (workspace_id, ym, component, source_id, quantity, unit, unit_price, amount)
         VALUES ($1, '2026-03', 'storage', 'db', 1000000, 'GB-month', 100000, 100000000000)`,
        [workspaceId],
      );
      expect(await db.query('SELECT source_id, amount::text FROM billing_rated_lines ORDER BY component', [])).toEqual([
        { source_id: oldPeriod, amount: '99999999.999999' },
        { source_id: 'db', amount: '100000000000.000000' },
      ]);
    } finally {
      await db.destroy();
    }
  });
});
