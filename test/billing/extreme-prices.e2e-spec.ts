import { rateMonthJobId } from '../../src/billing/billing-jobs';
import { BillingRater } from '../../src/billing/billing-rater.service';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { Queues } from '../../src/queues/queue-names';
import { Auth, createWorkspace } from '../databases/support';
import { insertPeriod } from '../metrics/usage-periods';
import {
  createDeveloperWithToken,
  createIsolatedTestApp,
  eventually,
  TestApp,
  untilQueueIdle,
} from '../support/test-app';

/** The widest hourly cost compute_types (and the usage periods copying it) hold: numeric(10,4). */
const WIDEST_HOURLY_COST = '999999.9999';
/** A petabyte (10^15 bytes), held for a whole month: 10^6 GB-months. */
const PETABYTE = 1_000_000_000_000_000n;

const ymOf = (date: Date) => date.toISOString().slice(0, 7);

/**
 * Prices at the top of what the configuration accepts (PRO_MONTHLY_PRICE_USD and
 * STORAGE_PRICE_PER_GB_MONTH_USD at their maximum, 100,000 USD) times large usage: every line is
 * stored and rated, and the periodic sweep keeps every workspace's months rated.
 */
describe('billing at the largest prices the configuration and the compute types accept', () => {
  let t: TestApp & { metadataUrl: string };
  let auth: Auth;
  beforeAll(async () => {
    t = await createIsolatedTestApp({
      PRO_MONTHLY_PRICE_USD: '100000',
      STORAGE_PRICE_PER_GB_MONTH_USD: '100000',
      FREE_STORAGE_INCLUDED_GB: '0',
      BILLING_RATING_INTERVAL_SECONDS: '0',
      JOB_ATTEMPTS: '1',
    });
    auth = (await createDeveloperWithToken(t.app)).auth;
  });
  afterAll(() => t?.close());

  async function storeMonth(workspaceId: string, ym: string, bytes: bigint, seconds: number): Promise<string> {
    const databaseId = crypto.randomUUID();
    await t.dataSource.query(
      `INSERT INTO database_storage_usage (database_id, ym, workspace_id, byte_seconds, observed_seconds)
       VALUES ($1, $2, $3, $4, $5)`,
      [databaseId, ym, workspaceId, (bytes * BigInt(seconds)).toString(), seconds],
    );
    return databaseId;
  }

  function lines(workspaceId: string, ym: string) {
    return t.dataSource.query<{ component: string; quantity: string; unit_price: string; amount: string }[]>(
      `SELECT component, quantity::text, unit_price::text, amount::text
         FROM billing_rated_lines WHERE workspace_id = $1 AND ym = $2 ORDER BY component, source_id`,
      [workspaceId, ym],
    );
  }

  it('rates a month of the widest compute type, a petabyte at 100,000 USD/GB-month and PRO at 100,000 USD: exact lines, totals answered', async () => {
    const ws = await createWorkspace(t, auth);
    // January 2025: 31 days, 744 hours.
    const period = await insertPeriod(t, {
      workspaceId: ws.id,
      startedAt: '2025-01-01T00:00:00Z',
      endedAt: '2025-02-01T00:00:00Z',
    });
    await t.dataSource.query('UPDATE compute_usage_periods SET hourly_cost = $1 WHERE id = $2', [
      WIDEST_HOURLY_COST,
      period.id,
    ]);
    await storeMonth(ws.id, '2025-01', PETABYTE, 31 * 86400);
    await t.dataSource.query(
      `INSERT INTO subscriptions (workspace_id, level, valid_from, valid_to)
       VALUES ($1, 'PRO', '2025-01-01T00:00:00Z', '2025-02-01T00:00:00Z')`,
      [ws.id],
    );

    const res = await t.http.get(`/workspaces/${ws.slug}/billing/2025-01/totals`).set(auth);
    expect(res.body).toEqual({
      ym: '2025-01',
      totals: {
        compute: 743999999.93,
        subscription: 100000,
        storage: 100000000000,
        total: 100744099999.93,
      },
    });
    expect(res.status).toBe(200);
    expect(await lines(ws.id, '2025-01')).toEqual([
      { component: 'compute', quantity: '744.000000', unit_price: '999999.999900', amount: '743999999.925600' },
      { component: 'storage', quantity: '1000000.000000', unit_price: '100000.000000', amount: '100000000000.000000' },
      { component: 'subscription', quantity: '1.000000', unit_price: '100000.000000', amount: '100000.000000' },
    ]);
  });

  it("the periodic sweep rates every workspace's month, the one with the largest lines too", async () => {
    const now = new Date();
    const ym = ymOf(now);
    const monthStart = new Date(`${ym}-01T00:00:00Z`).getTime();
    const large = await createWorkspace(t, auth);
    // A petabyte held all month so far (a 30-day month's worth, whatever today is).
    await storeMonth(large.id, ym, PETABYTE, 30 * 86400);
    const ordinary = await createWorkspace(t, auth);
    await insertPeriod(t, {
      workspaceId: ordinary.id,
      startedAt: new Date(Math.max(now.getTime() - 3_600_000, monthStart)),
      endedAt: now,
    });

    await t.app.get(BillingRater).sweep();
    await untilQueueIdle(t.app, Queues.Billing);
    const queue = t.app.get(JobDispatcher).queue(Queues.Billing);
    // A completed job is removed; one that failed is kept, with its reason.
    expect((await queue.getJob(rateMonthJobId(large.id, ym)))?.failedReason).toBeUndefined();
    const storage = await eventually(async () => (await lines(large.id, ym)).find((l) => l.component === 'storage'));
    expect(storage).toMatchObject({ unit_price: '100000.000000' });
    expect(Number(storage.amount)).toBeGreaterThan(1e10);
    expect((await lines(ordinary.id, ym)).map((l) => l.component)).toContain('compute');
  });

  it('stores any line whose quantity and unit price fit their own columns: the amount column holds their product', async () => {
    const ws = await createWorkspace(t, auth);
    // The largest values numeric(18,6) and numeric(12,6) hold.
    await t.dataSource.query(
      `INSERT INTO billing_rated_lines (workspace_id, ym, component, source_id, quantity, unit, unit_price, amount)
       SELECT $1, '2025-01', 'storage', 'largest', q, 'GB-month', p, round(q * p, 6)
         FROM (VALUES (999999999999.999999::numeric(18,6), 999999.999999::numeric(12,6))) AS v(q, p)`,
      [ws.id],
    );
    expect((await lines(ws.id, '2025-01')).map((l) => l.amount)).toEqual(['999999999998999999.000000']);
  });
});
