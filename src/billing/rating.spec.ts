import { parseBillingMonth } from './billing-month';
import { formatMicros, rateMonth, RatingInput, toMicros } from './rating';

const april = parseBillingMonth('2025-04')!;
const afterApril = new Date('2025-06-01T00:00:00Z');
const price = (level: string) => (level === 'PRO' ? 25 : 0);

function rate(partial: Partial<RatingInput>) {
  return rateMonth({ month: april, now: afterApril, periods: [], subscriptions: [], monthlyPrice: price, ...partial });
}

describe('rating', () => {
  it('prices compute by instance-hours in the month times the hourly cost', () => {
    const lines = rate({
      periods: [
        {
          id: 'p1',
          hourlyCost: 0.1,
          startedAt: new Date('2025-04-10T00:00:00Z'),
          endedAt: new Date('2025-04-10T10:00:00Z'),
        },
      ],
    });
    expect(lines).toEqual([
      {
        component: 'compute',
        sourceId: 'p1',
        quantity: '10.000000',
        unit: 'instance-hour',
        unitPrice: '0.100000',
        amount: '1.000000',
      },
    ]);
  });

  it('keeps the largest lines within their columns: quantity under 10^12, unit price under 10^6, amount under 10^18', () => {
    // A month of the widest compute type (numeric(10,4)), PRO and storage at the most the
    // configuration accepts (100000 USD), and the largest database PostgreSQL can report, all month.
    const january = parseBillingMonth('2025-01')!;
    const lines = rateMonth({
      month: january,
      now: afterApril,
      periods: [{ id: 'p', hourlyCost: 999999.9999, startedAt: january.start, endedAt: null }],
      subscriptions: [{ id: 's', level: 'PRO', validFrom: january.start, validTo: null }],
      monthlyPrice: () => 100000,
      storage: [{ databaseId: 'd', byteSeconds: 9_223_372_036_854_775_807n * 2_678_400n }],
      storagePricePerGbMonth: 100000,
    });
    expect(lines.map((l) => [l.component, l.quantity, l.unitPrice, l.amount])).toEqual([
      ['compute', '744.000000', '999999.999900', '743999999.925600'],
      ['storage', '9223372036.854776', '100000.000000', '922337203685477.580700'],
      ['subscription', '1.000000', '100000.000000', '100000.000000'],
    ]);
  });

  it('counts only the part of a period inside the month', () => {
    const period = {
      id: 'p',
      hourlyCost: 0.2,
      startedAt: new Date('2025-03-31T20:00:00Z'),
      endedAt: new Date('2025-04-01T06:00:00Z'),
    };
    expect(rate({ periods: [period] })[0]).toMatchObject({ quantity: '6.000000', amount: '1.200000' });
    expect(rate({ periods: [period], month: parseBillingMonth('2025-03')! })[0]).toMatchObject({
      quantity: '4.000000',
      amount: '0.800000',
    });
  });

  it('accrues a running period up to now, and skips what lies outside the month', () => {
    const now = new Date('2025-04-02T01:30:00Z');
    const lines = rate({
      now,
      periods: [
        { id: 'running', hourlyCost: 0.4, startedAt: new Date('2025-04-01T00:00:00Z'), endedAt: null },
        {
          id: 'march',
          hourlyCost: 0.4,
          startedAt: new Date('2025-03-01T00:00:00Z'),
          endedAt: new Date('2025-04-01T00:00:00Z'),
        },
      ],
    });
    expect(lines).toEqual([
      expect.objectContaining({ sourceId: 'running', quantity: '25.500000', amount: '10.200000' }),
    ]);
  });

  it('prorates the monthly price by the part of the month the level was held; FREE costs 0', () => {
    const lines = rate({
      subscriptions: [
        {
          id: 'free',
          level: 'FREE',
          validFrom: new Date('2025-01-01T00:00:00Z'),
          validTo: new Date('2025-04-16T00:00:00Z'),
        },
        { id: 'pro', level: 'PRO', validFrom: new Date('2025-04-16T00:00:00Z'), validTo: null },
      ],
    });
    expect(lines).toEqual([
      {
        component: 'subscription',
        sourceId: 'free',
        quantity: '0.500000',
        unit: 'month',
        unitPrice: '0.000000',
        amount: '0.000000',
      },
      {
        component: 'subscription',
        sourceId: 'pro',
        quantity: '0.500000',
        unit: 'month',
        unitPrice: '25.000000',
        amount: '12.500000',
      },
    ]);
  });

  it('is exact to the millionth, rounding half up', () => {
    // One second at 0.0001 USD/h is 0.0000000277… USD: rounds to 0.
    // 1/3 of a 30-day month at 25 USD is 8.333333…; 2/3 is 16.666666… -> 16.666667.
    const lines = rate({
      periods: [
        {
          id: 'tiny',
          hourlyCost: 0.0001,
          startedAt: new Date('2025-04-01T00:00:00Z'),
          endedAt: new Date('2025-04-01T00:00:01Z'),
        },
      ],
      subscriptions: [
        {
          id: 'a',
          level: 'PRO',
          validFrom: new Date('2025-04-01T00:00:00Z'),
          validTo: new Date('2025-04-11T00:00:00Z'),
        },
        { id: 'b', level: 'PRO', validFrom: new Date('2025-04-11T00:00:00Z'), validTo: null },
      ],
    });
    expect(lines.map((l) => [l.sourceId, l.amount])).toEqual([
      ['tiny', '0.000000'],
      ['a', '8.333333'],
      ['b', '16.666667'],
    ]);
  });

  it('prices storage by the average GB held over the month times the price per GB-month', () => {
    // April has 30 days = 2,592,000 s. 2 GB for the whole month = 2 GB-months; 1 GB for half of it = 0.5.
    const month = 2_592_000n;
    const lines = rate({
      storage: [
        { databaseId: 'db-a', byteSeconds: 2_000_000_000n * month },
        { databaseId: 'db-b', byteSeconds: (1_000_000_000n * month) / 2n },
      ],
      storagePricePerGbMonth: 0.125,
    });
    expect(lines).toEqual([
      {
        component: 'storage',
        sourceId: 'db-a',
        quantity: '2.000000',
        unit: 'GB-month',
        unitPrice: '0.125000',
        amount: '0.250000',
      },
      {
        component: 'storage',
        sourceId: 'db-b',
        quantity: '0.500000',
        unit: 'GB-month',
        unitPrice: '0.125000',
        amount: '0.062500',
      },
    ]);
  });

  it('takes the FREE allowance (prorated by the part of the month on FREE) off storage, never below 0', () => {
    const month = 2_592_000n;
    const subscriptions = [
      {
        id: 'free',
        level: 'FREE',
        validFrom: new Date('2025-01-01T00:00:00Z'),
        validTo: new Date('2025-04-16T00:00:00Z'),
      },
      { id: 'pro', level: 'PRO', validFrom: new Date('2025-04-16T00:00:00Z'), validTo: null },
    ];
    const included = (level: string) => (level === 'FREE' ? 1 : 0);
    // 3 GB-months held; FREE for half the month includes 0.5 GB-months.
    const lines = rate({
      subscriptions,
      storage: [{ databaseId: 'db', byteSeconds: 3_000_000_000n * month }],
      storagePricePerGbMonth: 0.1,
      includedStorageGb: included,
    }).filter((l) => l.component === 'storage');
    expect(lines).toEqual([
      {
        component: 'storage',
        sourceId: 'allowance:free',
        quantity: '-0.500000',
        unit: 'GB-month',
        unitPrice: '0.100000',
        amount: '-0.050000',
      },
      {
        component: 'storage',
        sourceId: 'db',
        quantity: '3.000000',
        unit: 'GB-month',
        unitPrice: '0.100000',
        amount: '0.300000',
      },
    ]);
    // Less held than included: the allowance only cancels what is held.
    const small = rate({
      subscriptions,
      storage: [{ databaseId: 'db', byteSeconds: 100_000_000n * month }],
      storagePricePerGbMonth: 0.1,
      includedStorageGb: included,
    }).filter((l) => l.component === 'storage');
    expect(small.map((l) => [l.sourceId, l.quantity, l.amount])).toEqual([
      ['allowance:free', '-0.100000', '-0.010000'],
      ['db', '0.100000', '0.010000'],
    ]);
    // Nothing held: no storage lines at all.
    expect(
      rate({ subscriptions, storage: [], includedStorageGb: included }).some((l) => l.component === 'storage'),
    ).toBe(false);
  });

  it('gives the time after a close (no row, held to FREE) the FREE allowance too, from when the workspace held a level', () => {
    const month = 2_592_000n;
    /** The storage lines of 3 GB held all April at 0.1 USD/GB-month, FREE including 1 GB-month. */
    const storageLines = (subscriptions: RatingInput['subscriptions'], heldSince: string, now = afterApril) =>
      rate({
        subscriptions,
        heldSince: new Date(heldSince),
        now,
        storage: [{ databaseId: 'db', byteSeconds: 3_000_000_000n * month }],
        storagePricePerGbMonth: 0.1,
        includedStorageGb: (level: string) => (level === 'FREE' ? 1 : 0),
      }).filter((l) => l.component === 'storage');
    // FREE until the 11th, closed since: the whole month is FREE's, a third by its row.
    const freeUntil11th = {
      id: 'free',
      level: 'FREE',
      validFrom: new Date('2025-01-01T00:00:00Z'),
      validTo: new Date('2025-04-11T00:00:00Z'),
    };
    expect(
      storageLines([freeUntil11th], '2025-01-01T00:00:00Z').map((l) => [l.sourceId, l.quantity, l.amount]),
    ).toEqual([
      ['allowance:closed', '-0.666667', '-0.066667'],
      ['allowance:free', '-0.333333', '-0.033333'],
      ['db', '3.000000', '0.300000'],
    ]);
    // PRO closed on the 16th: the second half is FREE's. Before the workspace held anything, nothing.
    const pro = {
      id: 'pro',
      level: 'PRO',
      validFrom: new Date('2025-04-06T00:00:00Z'),
      validTo: new Date('2025-04-16T00:00:00Z'),
    };
    expect(storageLines([pro], '2025-04-06T00:00:00Z').map((l) => [l.sourceId, l.quantity])).toEqual([
      ['allowance:closed', '-0.500000'],
      ['db', '3.000000'],
    ]);
    // Closed before the month: all of it. Accrued up to now in the current month.
    const midApril = new Date('2025-04-16T00:00:00Z');
    expect(storageLines([], '2025-01-01T00:00:00Z', midApril).map((l) => [l.sourceId, l.quantity])).toEqual([
      ['allowance:closed', '-0.500000'],
      ['db', '3.000000'],
    ]);
  });

  it('formats millionths exactly', () => {
    expect(formatMicros(toMicros(0.1))).toBe('0.100000');
    expect(formatMicros(toMicros(1234.5678))).toBe('1234.567800');
    expect(formatMicros(-1n)).toBe('-0.000001');
  });
});
