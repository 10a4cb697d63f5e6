import { billingMonthOf, parseBillingMonth, previousBillingMonth } from './billing-month';

describe('billing months', () => {
  it('are UTC calendar months [start, end)', () => {
    expect(parseBillingMonth('2025-02')).toEqual({
      ym: '2025-02',
      start: new Date('2025-02-01T00:00:00Z'),
      end: new Date('2025-03-01T00:00:00Z'),
    });
    expect(parseBillingMonth('2024-12')?.end).toEqual(new Date('2025-01-01T00:00:00Z'));
  });

  it('accept only YYYY-MM from 1970-01', () => {
    for (const bad of ['2025-1', '2025-13', '2025-00', '25-01', '2025/01', '2025-01-01', ' 2025-01', '1969-12', ''])
      expect(parseBillingMonth(bad)).toBeNull();
    expect(parseBillingMonth('1970-01')?.start.getTime()).toBe(0);
  });

  it('finds the month of a moment and the month before', () => {
    const march = billingMonthOf(new Date('2025-03-31T23:59:59.999Z'));
    expect(march.ym).toBe('2025-03');
    expect(previousBillingMonth(march).ym).toBe('2025-02');
    expect(previousBillingMonth(billingMonthOf(new Date('2025-01-01T00:00:00Z'))).ym).toBe('2024-12');
  });
});
