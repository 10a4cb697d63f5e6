import { BillingRater } from '../../src/billing/billing-rater.service';
import { billingMonthOf, parseBillingMonth } from '../../src/billing/billing-month';
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

  it("keeps the prices a month was first rated at; a past month first rated after the change takes the nearest recorded month's; the month current at the change gets the new ones", async () => {
    const ws = await createWorkspace(before, auth);
    // PRO since 2025-01-01, 4 GB held all of January, February and March.
    await before.dataSource.query(
      `INSERT INTO subscriptions (workspace_id, level, valid_from, valid_to) VALUES ($1, 'PRO', '2025-01-01T00:00:00Z', NULL)`,
      [ws.id],
    );
    await before.dataSource.query(
      `INSERT INTO database_storage_usage (database_id, ym, workspace_id, byte_seconds, observed_seconds)
       SELECT gen_random_uuid(), m.ym, $1, 4000000000::numeric * m.seconds, m.seconds
         FROM (VALUES ('2025-01', 2678400), ('2025-02', 2419200), ('2025-03', 2678400)) AS m(ym, seconds)`,
      [ws.id],
    );
    const totals = async (t: TestApp, ym: string) =>
      (await t.http.get(`/workspaces/${ws.slug}/billing/${ym}/totals`).set(auth).expect(200)).body;
    const atOldPrices = { compute: 0, subscription: 25, storage: 0.5, total: 25.5 };
    const atNewPrices = { compute: 0, subscription: 50, storage: 1, total: 51 };

    expect(await totals(before, '2025-01')).toEqual({ ym: '2025-01', totals: atOldPrices });

    after = await createTestApp({ ...NEW_PRICES, DATABASE_URL: metadataUrl });
    expect(await totals(after, '2025-01')).toEqual({ ym: '2025-01', totals: atOldPrices });
    // March, rated by the new configuration while it is the current month: the new prices.
    await after.app.get(BillingRater).rate(ws.id, parseBillingMonth('2025-03')!, new Date('2025-03-20T00:00:00Z'));
    // February, never rated before and past when first rated: January's, the nearest recorded
    // before it, not the configuration of the day (which would reach back).
    expect(await totals(after, '2025-02')).toEqual({ ym: '2025-02', totals: atOldPrices });
    expect(await totals(after, '2025-03')).toEqual({ ym: '2025-03', totals: atNewPrices });
    // Rated again by either configuration, each month keeps its own.
    expect(await totals(before, '2025-03')).toEqual({ ym: '2025-03', totals: atNewPrices });
    expect(await totals(after, '2025-01')).toEqual({ ym: '2025-01', totals: atOldPrices });
    expect(
      await before.dataSource.query(
        `SELECT ym, pro_monthly_price_usd::text AS pro, storage_price_per_gb_month_usd::text AS storage,
                free_storage_included_gb::text AS free
           FROM billing_month_prices WHERE ym LIKE '2025-%' ORDER BY ym`,
      ),
    ).toEqual([
      { ym: '2025-01', pro: '25.000000', storage: '0.125000', free: '1.000000' },
      { ym: '2025-02', pro: '25.000000', storage: '0.125000', free: '1.000000' },
      { ym: '2025-03', pro: '50.000000', storage: '0.250000', free: '2.000000' },
    ]);
  });

  it("records the current month's prices at its first reconcile pass, with nothing to bill, whatever the rating interval", async () => {
    const isolated = await createIsolatedMetadataDatabase();
    // The longest interval: the pass records the month's prices whether or not it rates anything.
    const t = await createTestApp({
      ...OLD_PRICES,
      DATABASE_URL: isolated,
      BILLING_RATING_INTERVAL_SECONDS: '2678400',
    });
    try {
      const rater = t.app.get(BillingRater);
      const now = new Date();
      await rater.sweep(now);
      await t.dataSource.query('DELETE FROM billing_month_prices');
      const nextMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 2));
      await rater.sweep(nextMonth);
      expect(
        await t.dataSource.query('SELECT ym, pro_monthly_price_usd::text AS pro FROM billing_month_prices'),
      ).toEqual([{ ym: billingMonthOf(nextMonth).ym, pro: '25.000000' }]);
    } finally {
      await t.close();
      await dropMetadataDatabase(isolated);
    }
  });
});
