import { BillingRater } from '../../src/billing/billing-rater.service';
import { billingMonthOf } from '../../src/billing/billing-month';
import { Auth, createWorkspace } from '../databases/support';
import {
  createDeveloperWithToken,
  createIsolatedMetadataDatabase,
  createTestApp,
  dropMetadataDatabase,
  TestApp,
} from '../support/test-app';

const OLD_PRICES = {
  PRO_MONTHLY_PRICE_USD: '25',
  STORAGE_PRICE_PER_GB_MONTH_USD: '0.125',
  FREE_STORAGE_INCLUDED_GB: '1',
};
const NEW_PRICES = {
  PRO_MONTHLY_PRICE_USD: '50',
  STORAGE_PRICE_PER_GB_MONTH_USD: '0.25',
  FREE_STORAGE_INCLUDED_GB: '2',
};
/** 4 GB held for the whole of January 2025 (31 days). */
const FOUR_GB_JANUARY = (4_000_000_000n * 31n * 86_400n).toString();

/**
 * A price in the configuration (PRO_MONTHLY_PRICE_USD, STORAGE_PRICE_PER_GB_MONTH_USD,
 * FREE_STORAGE_INCLUDED_GB) changes for the months rated after it, never for one already billed:
 * every rating read today's configuration, so raising a price rewrote every past month read again
 * (and the sweep rewrote the previous month on its own).
 */
describe('a change of prices in the configuration', () => {
  let metadataUrl: string;
  let before: TestApp;
  let after: TestApp | undefined;
  let auth: Auth;
  beforeAll(async () => {
    // Two configurations on one metadata database of the spec's own: the run's shared one has
    // months other specs rate at the default prices.
    metadataUrl = await createIsolatedMetadataDatabase();
    before = await createTestApp({ ...OLD_PRICES, DATABASE_URL: metadataUrl });
    auth = (await createDeveloperWithToken(before.app)).auth;
  });
  afterAll(async () => {
    await before?.close();
    await after?.close();
    await dropMetadataDatabase(metadataUrl);
  });

  it('keeps the prices a month was first rated at: a past month reads the same after the change, a month first rated after it has the new ones', async () => {
    const ws = await createWorkspace(before, auth);
    // PRO since 2025-01-01, 4 GB held all of January and of February.
    await before.dataSource.query(
      `INSERT INTO subscriptions (workspace_id, level, valid_from, valid_to) VALUES ($1, 'PRO', '2025-01-01T00:00:00Z', NULL)`,
      [ws.id],
    );
    await before.dataSource.query(
      `INSERT INTO database_storage_usage (database_id, ym, workspace_id, byte_seconds, observed_seconds)
       VALUES (gen_random_uuid(), '2025-01', $1, $2, 2678400), (gen_random_uuid(), '2025-02', $1, $3, 2419200)`,
      [ws.id, FOUR_GB_JANUARY, (4_000_000_000n * 28n * 86_400n).toString()],
    );
    const totals = async (t: TestApp, ym: string) =>
      (await t.http.get(`/workspaces/${ws.slug}/billing/${ym}/totals`).set(auth).expect(200)).body;

    const january = { ym: '2025-01', totals: { compute: 0, subscription: 25, storage: 0.5, total: 25.5 } };
    expect(await totals(before, '2025-01')).toEqual(january);

    after = await createTestApp({ ...NEW_PRICES, DATABASE_URL: metadataUrl });
    expect(await totals(after, '2025-01')).toEqual(january);
    // February was never rated before: the new prices.
    expect(await totals(after, '2025-02')).toEqual({
      ym: '2025-02',
      totals: { compute: 0, subscription: 50, storage: 1, total: 51 },
    });
    // Rated again by either configuration, each month keeps its own.
    await after.app.get(BillingRater).rate(ws.id, billingMonthOf(new Date('2025-01-15T00:00:00Z')));
    expect(await totals(before, '2025-01')).toEqual(january);
    expect((await totals(before, '2025-02')).totals.subscription).toBe(50);
    expect(
      await before.dataSource.query(
        `SELECT ym, pro_monthly_price_usd::text AS pro, storage_price_per_gb_month_usd::text AS storage,
                free_storage_included_gb::text AS free
           FROM billing_month_prices WHERE ym IN ('2025-01', '2025-02') ORDER BY ym`,
      ),
    ).toEqual([
      { ym: '2025-01', pro: '25.000000', storage: '0.125000', free: '1.000000' },
      { ym: '2025-02', pro: '50.000000', storage: '0.250000', free: '2.000000' },
    ]);
  });

  it("records the current month's prices at the sweep, with nothing to bill: a change later in the month waits for the next", async () => {
    const isolated = await createIsolatedMetadataDatabase();
    const t = await createTestApp({ ...OLD_PRICES, DATABASE_URL: isolated, BILLING_RATING_INTERVAL_SECONDS: '0' });
    try {
      await t.app.get(BillingRater).sweep();
      expect(
        await t.dataSource.query('SELECT ym, pro_monthly_price_usd::text AS pro FROM billing_month_prices'),
      ).toEqual([{ ym: billingMonthOf(new Date()).ym, pro: '25.000000' }]);
    } finally {
      await t.close();
      await dropMetadataDatabase(isolated);
    }
  });
});
