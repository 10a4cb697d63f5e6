import { DataPlaneServerState } from '../../src/data-plane/data-plane-server.entity';
import { DataPlaneServers } from '../../src/data-plane/data-plane-servers.service';
import { DataPlane } from '../../src/data-plane/data-plane.service';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { Queues } from '../../src/queues/queue-names';
import { Auth, createReadyDatabase, createWorkspace, databaseRow, serverIdOf } from '../databases/support';
import { secondDataPlaneUrl } from '../support/second-data-plane';
import { TcpRelay } from '../support/tcp-relay';
import { createDeveloperWithToken, createIsolatedTestApp, eventually, reconcile, TestApp } from '../support/test-app';
import { InstanceBody, instanceRow, PeriodRow, periodsOf, waitForInstance } from './support';

const REGION = 'AWS_US_WEST_2';

/** Hours from `from` to `to`, exact to 6 decimals (half up): a compute line's quantity. */
function hoursBetween(from: Date, to: Date): string {
  const ms = BigInt(to.getTime() - from.getTime());
  const micros = (2n * ms * 1_000_000n + 3_600_000n) / 7_200_000n;
  return `${micros / 1_000_000n}.${(micros % 1_000_000n).toString().padStart(6, '0')}`;
}

const ymOf = (date: Date) => date.toISOString().slice(0, 7);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * When a compute instance stops being billed: when its delete was accepted (or, for the instances of
 * a deleted database, when that deletion was due), never when the data plane got round to it. The
 * databases live on the second data-plane cluster behind a relay that the specs take down: the
 * outage during which the termination (or the finalization) cannot happen.
 */
describe('compute billing ends with the recorded deletion, whatever the data plane does', () => {
  let t: TestApp & { metadataUrl: string };
  let link: TcpRelay;
  let auth: Auth;
  let workspace: { id: string; slug: string };

  beforeAll(async () => {
    link = await TcpRelay.inFrontOf(secondDataPlaneUrl());
    t = await createIsolatedTestApp({
      DATABASE_POOL_TARGET: '0',
      DATABASE_DELETION_GRACE_SECONDS: '3600',
      DATA_PLANE_CONNECT_TIMEOUT_MS: '1000',
    });
    auth = (await createDeveloperWithToken(t.app)).auth;
    workspace = await createWorkspace(t, auth);
    await t.http.put(`/workspaces/${workspace.slug}/subscription`).set(auth).send({ level: 'PRO' }).expect(200);
    // Every database of these specs goes to the relayed server.
    const servers = t.app.get(DataPlaneServers);
    const relayed = await servers.add({ region: REGION, url: link.through(secondDataPlaneUrl()), maxDatabases: 100 });
    await servers.setState(await serverIdOf(t, REGION), DataPlaneServerState.Draining);
    expect(relayed.id).toBeTruthy();
  }, 120000);
  afterAll(async () => {
    await t?.close();
    await link?.down();
  });
  afterEach(() => link.up().catch(() => undefined));

  const computePath = (db: { name: string }, id = '') =>
    `/workspaces/${workspace.slug}/databases/${db.name}/compute${id ? `/${id}` : ''}`;

  async function readyInstance(db: { name: string }, instanceSize = 'dc-small'): Promise<InstanceBody> {
    const res = await t.http
      .post(computePath(db))
      .set(auth)
      .send({ instanceSize, instanceName: `ci_${Date.now()}` })
      .expect(202);
    return waitForInstance(t, auth, workspace.slug, db.name, (res.body as InstanceBody).instanceId, 'READY');
  }

  /** Moves the instance's (only) period start `hours` back, not before the month began; answers it. */
  async function backdate(instanceId: string, hours: number): Promise<Date> {
    const [row] = await t.dataSource.query<{ started_at: Date }[]>(
      `WITH moved AS (
         UPDATE compute_usage_periods
            SET started_at = GREATEST(started_at - make_interval(hours => $2), date_trunc('month', now(), 'UTC'))
          WHERE instance_id = $1 RETURNING started_at)
       SELECT started_at FROM moved`,
      [instanceId, hours],
    );
    return row.started_at;
  }

  /** The month's compute line of `periodId`, after reading the month's totals (which rates it). */
  async function billed(periodId: string, ym: string) {
    const totals = (await t.http.get(`/workspaces/${workspace.slug}/billing/${ym}/totals`).set(auth).expect(200))
      .body as { totals: Record<string, number> };
    const [line] = await t.dataSource.query<{ quantity: string; amount: string }[]>(
      `SELECT quantity::text, amount::text FROM billing_rated_lines
        WHERE workspace_id = $1 AND ym = $2 AND component = 'compute' AND source_id = $3`,
      [workspace.id, ym, periodId],
    );
    return { compute: totals.totals.compute, line };
  }

  /** What the compute metrics say about one instance (default window: the last 24 hours). */
  async function measured(databaseId: string, instanceId: string) {
    const res = await t.http.get(`/workspaces/${workspace.slug}/metrics/compute`).set(auth).expect(200);
    const usage = (
      res.body as {
        usageByDatabase: Record<
          string,
          { usageByInstance: Record<string, { totalVCPUHours: number; start: string; end: string }> }
        >;
      }[]
    )[0].usageByDatabase[databaseId].usageByInstance[instanceId];
    return usage;
  }

  it('a deleted instance is billed up to the moment its delete was accepted, though the data plane terminates it only later', async () => {
    const db = await createReadyDatabase(t, auth, workspace.slug);
    const instance = await readyInstance(db); // 2 vCPUs at 0.10 USD/h
    const started = await backdate(instance.instanceId, 2);

    await link.down();
    await t.http.delete(computePath(db, instance.instanceId)).set(auth).expect(202);
    const { deleted } = await instanceRow(t, instance.instanceId);
    expect(deleted).toEqual(expect.any(Date));
    // The termination cannot happen: the data plane refuses (its job fails), the instance stays DELETING.
    const jobs = t.app.get(JobDispatcher).queue(Queues.ComputeLifecycle);
    await eventually(
      async () => ((await jobs.getJob(`compute-terminate:${instance.instanceId}`))?.attemptsMade ?? 0) > 0,
    );
    expect(await instanceRow(t, instance.instanceId)).toMatchObject({ status: 'DELETING', terminated: null });
    await pause(1500);

    // Billed and measured up to the delete, not up to now; recorded so.
    const [period] = await periodsOf(t, instance.instanceId);
    const ym = ymOf(deleted!);
    const during = await billed(period.id, ym);
    expect(during.line.quantity).toBe(hoursBetween(started, deleted!));
    const usage = await measured(db.id, instance.instanceId);
    expect(usage).toMatchObject({ start: started.toISOString(), end: deleted!.toISOString() });
    // Metrics and billing measure the same span: 2 vCPUs for the line's instance-hours.
    expect(usage.totalVCPUHours).toBeCloseTo(2 * Number(during.line.quantity), 5);
    expect(period.ended_at).toEqual(deleted);

    // The data plane is back: the instance is terminated now, and its bill does not move.
    await link.up();
    await reconcile(t.app);
    await waitForInstance(t, auth, workspace.slug, db.name, instance.instanceId, 'TERMINATED');
    const final = await instanceRow(t, instance.instanceId);
    expect(final.terminated!.getTime()).toBeGreaterThan(deleted!.getTime() + 1000);
    expect(await periodsOf(t, instance.instanceId)).toEqual([period]);
    expect(await billed(period.id, ym)).toEqual(during);
    expect(await measured(db.id, instance.instanceId)).toEqual(usage);
  });

  it('the instances of a deleted database are billed up to when its deletion was due, though finalization waits for the data plane', async () => {
    const db = await createReadyDatabase(t, auth, workspace.slug);
    const instance = await readyInstance(db);
    const started = await backdate(instance.instanceId, 3);
    await t.http.delete(`/workspaces/${workspace.slug}/databases/${db.name}`).set(auth).expect(200);
    // Its grace period ran out an hour ago (whole milliseconds, as the service's own times are).
    const [{ deletion_due_at: due }] = await t.dataSource.query<{ deletion_due_at: Date }[]>(
      `WITH due AS (
         UPDATE databases SET deletion_due_at = GREATEST(date_trunc('milliseconds', now() - interval '1 hour'), $2)
          WHERE id = $1 RETURNING deletion_due_at)
       SELECT deletion_due_at FROM due`,
      [db.id, new Date(started.getTime() + 60_000)],
    );

    await link.down();
    await reconcile(t.app); // the overdue finalization fails: the data plane refuses
    expect((await databaseRow(t, db.id)).finalized).toBeNull();
    expect(await instanceRow(t, instance.instanceId)).toMatchObject({ status: 'READY', terminated: null });

    const [open] = await periodsOf(t, instance.instanceId);
    const ym = ymOf(due);
    const during = await billed(open.id, ym);
    expect(during.line.quantity).toBe(hoursBetween(started, due));
    const usage = await measured(db.id, instance.instanceId);
    expect(usage).toMatchObject({ start: started.toISOString(), end: due.toISOString() });
    expect(usage.totalVCPUHours).toBeCloseTo(2 * Number(during.line.quantity), 5);

    // Once it answers, the finalization terminates the instance and records the period's end as due.
    await link.up();
    await reconcile(t.app);
    expect((await databaseRow(t, db.id)).finalized).toEqual(expect.any(Date));
    const final = await instanceRow(t, instance.instanceId);
    expect(final).toMatchObject({ status: 'TERMINATED', terminated: expect.any(Date) });
    expect(final.terminated!.getTime()).toBeGreaterThan(due.getTime());
    expect(await periodsOf(t, instance.instanceId)).toEqual([{ ...open, ended_at: due }]);
    expect(await billed(open.id, ym)).toEqual(during);
  });

  it('a delete accepted while a resize is on the data plane ends the bill then: the late resize opens no period', async () => {
    const db = await createReadyDatabase(t, auth, workspace.slug);
    const instance = await readyInstance(db);
    const dataPlane = t.app.get(DataPlane);
    const apply = dataPlane.setConnectionLimit.bind(dataPlane);
    let onDataPlane!: () => void;
    const applying = new Promise<void>((resolve) => (onDataPlane = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // The resize's envelope is being applied (slowly) when the delete arrives.
    const spy = jest.spyOn(dataPlane, 'setConnectionLimit').mockImplementationOnce(async (...args) => {
      onDataPlane();
      await gate;
      return apply(...args);
    });
    let periods: PeriodRow[];
    try {
      await t.http.put(computePath(db, instance.instanceId)).set(auth).send({ instanceSize: 'dc-large' }).expect(202);
      await applying;
      await t.http.delete(computePath(db, instance.instanceId)).set(auth).expect(202);
      // The reconciler's sweep re-enqueues the unsettled instance meanwhile.
      await reconcile(t.app);
      release();
      await waitForInstance(t, auth, workspace.slug, db.name, instance.instanceId, 'TERMINATED');
      periods = await periodsOf(t, instance.instanceId);
    } finally {
      release();
      spy.mockRestore();
    }
    const { deleted } = await instanceRow(t, instance.instanceId);
    // One period, at the size it ran, ended by the delete: none at the new size, none left open.
    expect(periods.map((p) => [p.instance_type_id, p.ended_at])).toEqual([['dc-small', deleted]]);
  });
});
