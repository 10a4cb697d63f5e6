import { rateMonthJobId } from '../../src/billing/billing-jobs';
import { BillingRater } from '../../src/billing/billing-rater.service';
import { parseBillingMonth } from '../../src/billing/billing-month';
import { ComputeUsagePeriods } from '../../src/metrics/compute-usage-periods.service';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { Queues } from '../../src/queues/queue-names';
import { currentReconcileTally, ReconcileTally } from '../../src/queues/reconcile-tally';
import { Auth, createWorkspace } from '../databases/support';
import { insertPeriod } from '../metrics/usage-periods';
import {
  createDeveloperWithToken,
  createTestApp,
  eventually,
  reconcile,
  TestApp,
  untilQueueIdle,
} from '../support/test-app';

interface LineRow {
  id: string;
  component: string;
  source_id: string;
  quantity: string;
  unit: string;
  unit_price: string;
  amount: string;
}

const YM_ERROR = {
  errorCode: 'bad_request',
  message: 'ym must be a year and month in the form YYYY-MM (e.g. 2025-03), from 1970-01',
  statusCode: 400,
};

function ymOf(date: Date): string {
  return `${date.getUTCFullYear()}-${String(date.getUTCMonth() + 1).padStart(2, '0')}`;
}

describe('billing totals', () => {
  let t: TestApp;
  let auth: Auth;
  beforeAll(async () => {
    t = await createTestApp();
    auth = (await createDeveloperWithToken(t.app)).auth;
  });
  afterAll(() => t.close());

  const totalsPath = (slug: string, ym: string) => `/workspaces/${slug}/billing/${ym}/totals`;

  async function totals(slug: string, ym: string): Promise<{ ym: string; totals: Record<string, number> }> {
    return (await t.http.get(totalsPath(slug, ym)).set(auth).expect(200)).body;
  }

  function lines(workspaceId: string, ym: string): Promise<LineRow[]> {
    return t.dataSource.query(
      `SELECT id, component, source_id, quantity::text, unit, unit_price::text, amount::text
         FROM billing_rated_lines WHERE workspace_id = $1 AND ym = $2 ORDER BY component, source_id`,
      [workspaceId, ym],
    );
  }

  async function insertSubscription(workspaceId: string, level: string, from: string, to: string | null) {
    const [row] = await t.dataSource.query<{ id: string }[]>(
      'INSERT INTO subscriptions (workspace_id, level, valid_from, valid_to) VALUES ($1, $2, $3, $4) RETURNING id',
      [workspaceId, level, from, to],
    );
    return row.id;
  }

  it('prices a 2 vCPU period of exactly 10 hours at 0.10 USD/h at 1.00, from one rated line', async () => {
    const ws = await createWorkspace(t, auth);
    const period = await insertPeriod(t, {
      workspaceId: ws.id,
      type: 'dc-small',
      startedAt: '2025-04-10T08:00:00Z',
      endedAt: '2025-04-10T18:00:00Z',
    });
    expect(await totals(ws.slug, '2025-04')).toEqual({
      ym: '2025-04',
      totals: { compute: 1, subscription: 0, storage: 0, total: 1 },
    });
    expect(await lines(ws.id, '2025-04')).toEqual([
      {
        id: expect.any(String),
        component: 'compute',
        source_id: period.id,
        quantity: '10.000000',
        unit: 'instance-hour',
        unit_price: '0.100000',
        amount: '1.000000',
      },
    ]);
  });

  it('splits a period spanning a month boundary between the two months', async () => {
    const ws = await createWorkspace(t, auth);
    const period = await insertPeriod(t, {
      workspaceId: ws.id,
      type: 'dc-medium', // 0.20 USD/h
      startedAt: '2025-05-31T20:00:00Z',
      endedAt: '2025-06-01T06:00:00Z',
    });
    expect(await totals(ws.slug, '2025-05')).toEqual({
      ym: '2025-05',
      totals: { compute: 0.8, subscription: 0, storage: 0, total: 0.8 },
    });
    expect(await totals(ws.slug, '2025-06')).toEqual({
      ym: '2025-06',
      totals: { compute: 1.2, subscription: 0, storage: 0, total: 1.2 },
    });
    expect((await lines(ws.id, '2025-05')).map((l) => [l.source_id, l.quantity, l.amount])).toEqual([
      [period.id, '4.000000', '0.800000'],
    ]);
    expect((await lines(ws.id, '2025-06')).map((l) => [l.source_id, l.quantity, l.amount])).toEqual([
      [period.id, '6.000000', '1.200000'],
    ]);
    expect(await totals(ws.slug, '2025-07')).toEqual({
      ym: '2025-07',
      totals: { compute: 0, subscription: 0, storage: 0, total: 0 },
    });
  });

  it('prorates PRO (25 USD a month) by the part of the month it was held; FREE costs nothing', async () => {
    const ws = await createWorkspace(t, auth);
    const free = await insertSubscription(ws.id, 'FREE', '2025-01-01T00:00:00Z', '2025-06-16T00:00:00Z');
    const pro = await insertSubscription(ws.id, 'PRO', '2025-06-16T00:00:00Z', '2025-07-01T00:00:00Z');
    await insertSubscription(ws.id, 'FREE', '2025-07-01T00:00:00Z', null);
    expect(await totals(ws.slug, '2025-06')).toEqual({
      ym: '2025-06',
      totals: { compute: 0, subscription: 12.5, storage: 0, total: 12.5 },
    });
    const june = await lines(ws.id, '2025-06');
    expect(june).toHaveLength(2);
    expect(june).toEqual(
      expect.arrayContaining([
        {
          id: expect.any(String),
          component: 'subscription',
          source_id: free,
          quantity: '0.500000',
          unit: 'month',
          unit_price: '0.000000',
          amount: '0.000000',
        },
        {
          id: expect.any(String),
          component: 'subscription',
          source_id: pro,
          quantity: '0.500000',
          unit: 'month',
          unit_price: '25.000000',
          amount: '12.500000',
        },
      ]),
    );
  });

  it('bills a workspace that started PRO with POST on its creation at FREE until then and PRO from then', async () => {
    const ws = await createWorkspace(t, auth);
    const pro = (await t.http.post(`/workspaces/${ws.slug}/subscription`).set(auth).send({ level: 'PRO' }).expect(201))
      .body as { subscriptionId: string; validFrom: string };
    const [free] = await t.dataSource.query<{ id: string }[]>(
      'SELECT id FROM subscriptions WHERE workspace_id = $1 AND level = $2',
      [ws.id, 'FREE'],
    );
    const ym = ymOf(new Date(pro.validFrom));
    await totals(ws.slug, ym);
    const rated = await lines(ws.id, ym);
    expect(rated).toHaveLength(2);
    expect(rated).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ component: 'subscription', source_id: free.id, unit_price: '0.000000' }),
        expect.objectContaining({ component: 'subscription', source_id: pro.subscriptionId, unit_price: '25.000000' }),
      ]),
    );
  });

  it('prices storage by the average GB held over the month (0.125 USD/GB-month), less the 1 GB-month FREE includes; total adds the components as shown', async () => {
    const ws = await createWorkspace(t, auth);
    const free = await insertSubscription(ws.id, 'FREE', '2025-01-01T00:00:00Z', null);
    await insertPeriod(t, {
      workspaceId: ws.id,
      type: 'dc-small', // 0.10 USD/h
      startedAt: '2025-04-10T08:00:00Z',
      endedAt: '2025-04-10T18:00:00Z',
    });
    // 4 GB held for all of April (30 days): 4 GB-months, 0.50 USD; FREE includes 1 GB-month (0.125 USD).
    const database = '0b9a5c1e-7d7e-4d8e-9e53-0f4f3a2b1c0d';
    await t.dataSource.query(
      `INSERT INTO database_storage_usage (database_id, ym, workspace_id, byte_seconds, observed_seconds)
       VALUES ($1, '2025-04', $2, $3, 2592000)`,
      [database, ws.id, (4_000_000_000n * 2_592_000n).toString()],
    );
    expect(await totals(ws.slug, '2025-04')).toEqual({
      ym: '2025-04',
      totals: { compute: 1, subscription: 0, storage: 0.38, total: 1.38 },
    });
    const storage = (await lines(ws.id, '2025-04')).filter((l) => l.component === 'storage');
    expect(storage.map((l) => [l.source_id, l.quantity, l.unit, l.unit_price, l.amount])).toEqual([
      [database, '4.000000', 'GB-month', '0.125000', '0.500000'],
      [`allowance:${free}`, '-1.000000', 'GB-month', '0.125000', '-0.125000'],
    ]);
    // Other months hold nothing.
    expect(await totals(ws.slug, '2025-05')).toEqual({
      ym: '2025-05',
      totals: { compute: 0, subscription: 0, storage: 0, total: 0 },
    });
  });

  it('gives the time after a close the FREE allowance, as the plan limits hold such a workspace to FREE', async () => {
    const ws = await createWorkspace(t, auth);
    // FREE from January, closed on April 11: a third of April by its row, the rest closed.
    const free = await insertSubscription(ws.id, 'FREE', '2025-01-01T00:00:00Z', '2025-04-11T00:00:00Z');
    const database = '5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b';
    await t.dataSource.query(
      `INSERT INTO database_storage_usage (database_id, ym, workspace_id, byte_seconds, observed_seconds)
       VALUES ($1, '2025-04', $2, $3, 2592000), ($1, '2025-05', $2, $4, 2678400)`,
      [database, ws.id, (4_000_000_000n * 2_592_000n).toString(), (4_000_000_000n * 2_678_400n).toString()],
    );
    // 4 GB-months (0.50 USD) less 1 GB-month included over the whole month (0.125 USD).
    expect((await totals(ws.slug, '2025-04')).totals.storage).toBe(0.38);
    const storage = (await lines(ws.id, '2025-04')).filter((l) => l.component === 'storage');
    expect(storage.map((l) => [l.source_id, l.quantity, l.amount]).sort()).toEqual(
      [
        [database, '4.000000', '0.500000'],
        ['allowance:closed', '-0.666667', '-0.083333'],
        [`allowance:${free}`, '-0.333333', '-0.041667'],
      ].sort(),
    );
    // A month wholly after the close: FREE's allowance all month.
    expect((await totals(ws.slug, '2025-05')).totals.storage).toBe(0.38);
  });

  it('takes the FREE allowance off the storage of a workspace whose subscription was never read; reading it later changes nothing', async () => {
    const ws = await createWorkspace(t, auth);
    // Made before April 2025; nobody has read or written its subscription since.
    const created = new Date('2025-01-15T00:00:00Z');
    await t.dataSource.query('UPDATE workspaces SET created = $1 WHERE id = $2', [created, ws.id]);
    // 4 GB held for all of April (30 days): 4 GB-months, 0.50 USD; FREE includes 1 GB-month (0.125 USD).
    const database = '0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5';
    await t.dataSource.query(
      `INSERT INTO database_storage_usage (database_id, ym, workspace_id, byte_seconds, observed_seconds)
       VALUES ($1, '2025-04', $2, $3, 2592000)`,
      [database, ws.id, (4_000_000_000n * 2_592_000n).toString()],
    );
    const billed = { ym: '2025-04', totals: { compute: 0, subscription: 0, storage: 0.38, total: 0.38 } };
    expect(await totals(ws.slug, '2025-04')).toEqual(billed);
    // The workspace holds FREE from its creation: the row billing rated is the one its subscription shows.
    const rows = await t.dataSource.query<{ id: string }[]>(
      'SELECT id, level, valid_from, valid_to FROM subscriptions WHERE workspace_id = $1',
      [ws.id],
    );
    expect(rows).toEqual([{ id: expect.any(String), level: 'FREE', valid_from: created, valid_to: null }]);
    const free = rows[0].id;
    const rated = await lines(ws.id, '2025-04');
    expect(rated.map((l) => [l.component, l.source_id, l.quantity, l.unit_price, l.amount])).toEqual([
      ['storage', database, '4.000000', '0.125000', '0.500000'],
      ['storage', `allowance:${free}`, '-1.000000', '0.125000', '-0.125000'],
      ['subscription', free, '1.000000', '0.000000', '0.000000'],
    ]);

    const subscription = await t.http.get(`/workspaces/${ws.slug}/subscription`).set(auth).expect(200);
    expect(subscription.body).toEqual({
      workspace: ws.slug,
      level: 'FREE',
      validFrom: created.toISOString(),
      subscriptionId: free,
    });
    expect(await totals(ws.slug, '2025-04')).toEqual(billed);
    expect(await lines(ws.id, '2025-04')).toEqual(rated);
    expect(await t.dataSource.query('SELECT id FROM subscriptions WHERE workspace_id = $1', [ws.id])).toEqual([
      { id: free },
    ]);
  });

  it('sums exact lines and rounds the total to cents', async () => {
    const ws = await createWorkspace(t, auth);
    // Three periods of 20 minutes at 0.10 USD/h: 0.033333 each (rounded lines), 0.10 in total.
    for (const [from, to] of [
      ['2025-03-01T00:00:00Z', '2025-03-01T00:20:00Z'],
      ['2025-03-02T00:00:00Z', '2025-03-02T00:20:00Z'],
      ['2025-03-03T00:00:00Z', '2025-03-03T00:20:00Z'],
    ])
      await insertPeriod(t, { workspaceId: ws.id, startedAt: from, endedAt: to });
    expect((await totals(ws.slug, '2025-03')).totals.compute).toBe(0.1);
    expect((await lines(ws.id, '2025-03')).map((l) => l.amount)).toEqual(['0.033333', '0.033333', '0.033333']);
  });

  it('re-rates idempotently: reading twice updates the same lines instead of adding any', async () => {
    const ws = await createWorkspace(t, auth);
    await insertPeriod(t, { workspaceId: ws.id, startedAt: '2025-04-01T00:00:00Z', endedAt: '2025-04-01T05:00:00Z' });
    await insertSubscription(ws.id, 'PRO', '2025-04-01T00:00:00Z', null);
    const first = await totals(ws.slug, '2025-04');
    const before = await lines(ws.id, '2025-04');
    const second = await totals(ws.slug, '2025-04');
    expect(second).toEqual(first);
    expect(first.totals).toEqual({ compute: 0.5, subscription: 25, storage: 0, total: 25.5 });
    expect(await lines(ws.id, '2025-04')).toEqual(before);
    expect(before).toHaveLength(2);
  });

  it('accrues the current month up to now, and follows a running period as it ends', async () => {
    const ws = await createWorkspace(t, auth);
    const ym = ymOf(new Date());
    const monthStart = new Date(`${ym}-01T00:00:00Z`).getTime();
    // Started 10 hours ago (or at the start of the month, if that is sooner), still running.
    const startedAt = new Date(Math.max(Date.now() - 10 * 3_600_000, monthStart));
    const period = await insertPeriod(t, { workspaceId: ws.id, type: 'dc-large', startedAt, endedAt: null });
    const hoursSoFar = (Date.now() - startedAt.getTime()) / 3_600_000;
    const running = await totals(ws.slug, ym);
    expect(running.totals.compute).toBeGreaterThanOrEqual(Math.floor(hoursSoFar * 0.4 * 100) / 100);
    const [line] = await lines(ws.id, ym);
    expect(line).toMatchObject({ source_id: period.id, unit_price: '0.400000' });

    // It ran for 6 minutes in the end (0.1 h at 0.40 USD/h).
    const endedAt = new Date(startedAt.getTime() + 360_000);
    await t.dataSource.query('UPDATE compute_usage_periods SET ended_at = $1 WHERE id = $2', [endedAt, period.id]);
    expect((await totals(ws.slug, ym)).totals.compute).toBe(0.04);
    // (The workspace holds FREE from its creation, this month: a line at no cost.)
    expect(await lines(ws.id, ym)).toEqual([
      { ...line, quantity: '0.100000', amount: '0.040000' },
      expect.objectContaining({ component: 'subscription', unit_price: '0.000000', amount: '0.000000' }),
    ]);
  });

  it('counts only the workspace own usage', async () => {
    const mine = await createWorkspace(t, auth);
    const theirs = await createWorkspace(t, (await createDeveloperWithToken(t.app)).auth);
    await insertPeriod(t, {
      workspaceId: theirs.id,
      startedAt: '2025-02-01T00:00:00Z',
      endedAt: '2025-02-02T00:00:00Z',
    });
    expect(await totals(mine.slug, '2025-02')).toEqual({
      ym: '2025-02',
      totals: { compute: 0, subscription: 0, storage: 0, total: 0 },
    });
    expect(await lines(mine.id, '2025-02')).toEqual([]);
  });

  it('ignores a request body', async () => {
    const ws = await createWorkspace(t, auth);
    const res = await t.http
      .get(totalsPath(ws.slug, '2025-01'))
      .set(auth)
      .send({ id: 'x', email: 'someone@example.test', kind: 'HUMAN' })
      .expect(200);
    expect(res.body).toEqual({ ym: '2025-01', totals: { compute: 0, subscription: 0, storage: 0, total: 0 } });
  });

  it('refuses a ym that is not YYYY-MM, and a month later than the current one', async () => {
    const ws = await createWorkspace(t, auth);
    for (const ym of ['2025-4', '2025-13', '202504', 'April', '2025-04-01', '1969-12']) {
      const res = await t.http.get(totalsPath(ws.slug, ym)).set(auth).expect(400);
      expect(res.body).toEqual(YM_ERROR);
    }
    const now = new Date();
    const next = ymOf(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)));
    const future = await t.http.get(totalsPath(ws.slug, next)).set(auth).expect(400);
    expect(future.body).toEqual({
      errorCode: 'bad_request',
      message: `ym must not be later than the current month (${ymOf(now)})`,
      statusCode: 400,
    });
    expect(await t.dataSource.query('SELECT 1 FROM billing_rated_lines WHERE workspace_id = $1', [ws.id])).toEqual([]);
  });

  it('a rating that read its sources before another rated never writes over it: the lines follow the latest sources', async () => {
    const ws = await createWorkspace(t, auth);
    const ym = '2025-05';
    const first = await insertPeriod(t, {
      workspaceId: ws.id,
      startedAt: '2025-05-02T00:00:00Z',
      endedAt: '2025-05-02T01:00:00Z',
    });
    const periods = t.app.get(ComputeUsagePeriods);
    const overlapping = periods.overlapping.bind(periods);
    let reached!: () => void;
    const atGate = new Promise<void>((resolve) => (reached = resolve));
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // A billing job reads the month's periods, then is slow to write its lines...
    const spy = jest.spyOn(periods, 'overlapping').mockImplementationOnce(async (...args) => {
      const read = await overlapping(...args);
      reached();
      await gate;
      return read;
    });
    try {
      const job = t.app.get(BillingRater).rate(ws.id, parseBillingMonth(ym)!);
      await atGate;
      // ...while a period is recorded and a request rates the month with it.
      const second = await insertPeriod(t, {
        workspaceId: ws.id,
        startedAt: '2025-05-03T00:00:00Z',
        endedAt: '2025-05-03T02:00:00Z',
      });
      const request = t.http
        .get(totalsPath(ws.slug, ym))
        .set(auth)
        .then((r) => r);
      // (It may wait for the job to finish; give it the time it would take otherwise.)
      await Promise.race([request, new Promise((resolve) => setTimeout(resolve, 1000))]);
      open();
      const [, res] = await Promise.all([job, request]);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ym, totals: { compute: 0.3, subscription: 0, storage: 0, total: 0.3 } });
      expect((await lines(ws.id, ym)).map((l) => l.source_id).sort()).toEqual([first.id, second.id].sort());
    } finally {
      open();
      spy.mockRestore();
    }
  });

  it('re-rates the current and previous month of active workspaces from the periodic billing job', async () => {
    const ws = await createWorkspace(t, auth);
    const now = new Date();
    const previous = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 15));
    const old = await insertPeriod(t, {
      workspaceId: ws.id,
      startedAt: previous,
      endedAt: new Date(previous.getTime() + 2 * 3_600_000),
    });
    const running = await insertPeriod(t, {
      workspaceId: ws.id,
      startedAt: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
      endedAt: null,
    });
    await reconcile(t.app);
    const rated = await eventually(async () => {
      const rows = await t.dataSource.query<{ ym: string; source_id: string; amount: string }[]>(
        'SELECT ym, source_id, amount::text FROM billing_rated_lines WHERE workspace_id = $1 ORDER BY ym, component',
        [ws.id],
      );
      return rows.length === 3 ? rows : null;
    });
    // The workspace holds FREE from its creation (this month), at no cost.
    const [free] = await t.dataSource.query<{ id: string }[]>('SELECT id FROM subscriptions WHERE workspace_id = $1', [
      ws.id,
    ]);
    expect(rated).toEqual([
      { ym: ymOf(previous), source_id: old.id, amount: '0.200000' },
      { ym: ymOf(now), source_id: running.id, amount: expect.any(String) },
      { ym: ymOf(now), source_id: free.id, amount: '0.000000' },
    ]);
  });
});

describe('the periodic billing sweep', () => {
  let t: TestApp;
  let auth: Auth;
  beforeAll(async () => {
    t = await createTestApp({ BILLING_RATING_INTERVAL_SECONDS: '0' });
    auth = (await createDeveloperWithToken(t.app)).auth;
  });
  afterAll(() => t.close());

  it('re-rates workspaces with something to bill (usage, a paid level) and leaves idle FREE ones to their next read', async () => {
    const ym = ymOf(new Date());
    const ratedMonths = (workspaceId: string) =>
      t.dataSource.query<{ ym: string }[]>(
        'SELECT DISTINCT ym FROM billing_rated_lines WHERE workspace_id = $1 ORDER BY ym',
        [workspaceId],
      );
    // Idle on FREE (its FREE row written by reading its subscription), on PRO, and with compute usage.
    const idle = await createWorkspace(t, auth);
    await t.http.get(`/workspaces/${idle.slug}/subscription`).set(auth).expect(200);
    const paying = await createWorkspace(t, auth);
    await t.http.put(`/workspaces/${paying.slug}/subscription`).set(auth).send({ level: 'PRO' }).expect(200);
    const busy = await createWorkspace(t, auth);
    const monthStart = new Date(`${ym}-01T00:00:00Z`).getTime();
    await insertPeriod(t, {
      workspaceId: busy.id,
      startedAt: new Date(Math.max(Date.now() - 3_600_000, monthStart)),
      endedAt: new Date(),
    });

    expect(await t.app.get(BillingRater).sweep()).toBeGreaterThanOrEqual(4);
    // Every job the sweep enqueued has run.
    await untilQueueIdle(t.app, Queues.Billing);
    for (const ws of [paying, busy]) expect(await ratedMonths(ws.id)).toContainEqual({ ym });
    expect(await ratedMonths(idle.id)).toEqual([]);
    // Read, its month is rated then.
    const read = await t.http.get(`/workspaces/${idle.slug}/billing/${ym}/totals`).set(auth).expect(200);
    expect(read.body).toEqual({ ym, totals: { compute: 0, subscription: 0, storage: 0, total: 0 } });
    expect(await ratedMonths(idle.id)).toEqual([{ ym }]);
  });
});

describe('billing sweep after a rating job failed for good', () => {
  it('re-rates the month on the next sweep: the failed job kept under the same id does not swallow it', async () => {
    // One attempt, so a failure is final at once; no pause between sweeps.
    const t = await createTestApp({ JOB_ATTEMPTS: '1', BILLING_RATING_INTERVAL_SECONDS: '0' });
    try {
      const auth = (await createDeveloperWithToken(t.app)).auth;
      const ws = await createWorkspace(t, auth);
      const ym = ymOf(new Date());
      const monthStart = new Date(`${ym}-01T00:00:00Z`).getTime();
      const period = await insertPeriod(t, {
        workspaceId: ws.id,
        startedAt: new Date(Math.max(Date.now() - 3_600_000, monthStart)),
        endedAt: new Date(),
      });
      const rater = t.app.get(BillingRater);
      const queue = t.app.get(JobDispatcher).queue(Queues.Billing);
      const jobId = rateMonthJobId(ws.id, ym);
      const rate = rater.rate.bind(rater);
      // This workspace's rating fails (the sweep also rates every other workspace with usage).
      const spy = jest
        .spyOn(rater, 'rate')
        .mockImplementation((workspaceId, month, now) =>
          workspaceId === ws.id ? Promise.reject(new Error('rating failed')) : rate(workspaceId, month, now),
        );
      try {
        expect(await rater.sweep()).toBeGreaterThanOrEqual(2);
        await eventually(async () => (await queue.getJob(jobId))?.isFailed());
        // Kept for inspection a week at most, the last 1,000 of its queue at most.
        expect((await queue.getJob(jobId))!.opts.removeOnFail).toEqual({ age: 604800, count: 1000 });
      } finally {
        spy.mockRestore();
      }
      const lineSources = () =>
        t.dataSource.query<{ component: string; source_id: string }[]>(
          `SELECT component, source_id FROM billing_rated_lines
            WHERE workspace_id = $1 AND ym = $2 AND component = 'compute'`,
          [ws.id, ym],
        );
      expect(await lineSources()).toEqual([]);

      await rater.sweep();
      expect(await eventually(async () => ((await lineSources()).length ? lineSources() : null), 10000)).toEqual([
        { component: 'compute', source_id: period.id },
      ]);
    } finally {
      await t.close();
    }
  });
});

describe('billing sweep that fails', () => {
  let t: TestApp;
  let rater: BillingRater;
  // A workspace with compute usage this month: every sweep has its two months to re-rate.
  beforeEach(async () => {
    t = await createTestApp({ BILLING_RATING_INTERVAL_SECONDS: '3600' });
    const auth = (await createDeveloperWithToken(t.app)).auth;
    const ws = await createWorkspace(t, auth);
    const monthStart = new Date(`${ymOf(new Date())}-01T00:00:00Z`).getTime();
    await insertPeriod(t, {
      workspaceId: ws.id,
      startedAt: new Date(Math.max(Date.now() - 3_600_000, monthStart)),
      endedAt: new Date(),
    });
    rater = t.app.get(BillingRater);
  });
  afterEach(async () => {
    await untilQueueIdle(t.app, Queues.Billing);
    await t.close();
  });

  it('does not postpone the next one: a sweep whose reads failed is tried again on the next pass', async () => {
    // The metadata database out of reach for the sweep's first read.
    const spy = jest
      .spyOn(t.app.get(ComputeUsagePeriods), 'workspacesWithUsage')
      .mockRejectedValueOnce(new Error('metadata database unavailable'));
    try {
      await expect(rater.sweep()).rejects.toThrow('metadata database unavailable');
    } finally {
      spy.mockRestore();
    }
    // The next pass sweeps (previous and current month of this workspace at least); concurrent
    // calls do not double it, and the one after it waits for the interval.
    const [first, second] = await Promise.all([rater.sweep(), rater.sweep()]);
    expect(first).toBeGreaterThanOrEqual(2);
    expect(second).toBe(0);
    expect(await rater.sweep()).toBe(0);
  });

  it('does not postpone the next one either when Redis did not take its jobs: the next pass (Redis back) sweeps', async () => {
    // Redis away: the dispatcher takes no job and counts it owed in the pass's tally, as it does.
    const tally = new ReconcileTally();
    const spy = jest.spyOn(t.app.get(JobDispatcher), 'redispatch').mockImplementation(() => {
      currentReconcileTally.getStore()!.notEnqueued++;
      return Promise.resolve(false);
    });
    try {
      expect(await currentReconcileTally.run(tally, () => rater.sweep())).toBe(0);
    } finally {
      spy.mockRestore();
    }
    expect(tally.notEnqueued).toBeGreaterThanOrEqual(2);
    // Redis back: the pass run at once then sweeps, not the next one an hour later.
    expect(await currentReconcileTally.run(new ReconcileTally(), () => rater.sweep())).toBeGreaterThanOrEqual(2);
    expect(await rater.sweep()).toBe(0);
  });
});
