import type { BillingMonth } from './billing-month';

/**
 * Rating: turning a month's usage into priced lines. Pure and exact: times are whole milliseconds
 * and money is counted in micro-dollars with BigInt, so a line's amount is the exact product
 * rounded (half up) to 6 decimals, whatever the floating-point representation of the inputs.
 */

export const BillingComponents = {
  Compute: 'compute',
  Subscription: 'subscription',
} as const;
export type BillingComponent = (typeof BillingComponents)[keyof typeof BillingComponents];
export const ALL_BILLING_COMPONENTS: BillingComponent[] = Object.values(BillingComponents);

/** A dedicated compute instance running at one size, priced per instance-hour. */
export interface RatableUsagePeriod {
  id: string;
  /** US dollars per hour of the instance (all its vCPUs). */
  hourlyCost: number;
  startedAt: Date;
  /** null while the instance still runs. */
  endedAt: Date | null;
}

/** A subscription level held over `[validFrom, validTo)`. */
export interface RatableSubscription {
  id: string;
  level: string;
  validFrom: Date;
  validTo: Date | null;
}

/** A priced line; decimals are strings with 6 places (exact, as stored in `numeric` columns). */
export interface RatedLine {
  component: BillingComponent;
  sourceId: string;
  quantity: string;
  unit: string;
  unitPrice: string;
  amount: string;
}

export interface RatingInput {
  month: BillingMonth;
  /** Usage is accrued up to this moment: the current month is rated "to date". */
  now: Date;
  periods: RatableUsagePeriod[];
  subscriptions: RatableSubscription[];
  /** Monthly price in US dollars of a subscription level. */
  monthlyPrice: (level: string) => number;
}

export const COMPUTE_UNIT = 'instance-hour';
export const SUBSCRIPTION_UNIT = 'month';

const MICROS = 1_000_000n;
const MS_PER_HOUR = 3_600_000n;

/** US dollars (or any decimal) to an exact count of millionths. */
export function toMicros(value: number): bigint {
  return BigInt(Math.round(value * 1_000_000));
}

/** Division of non-negative integers, rounded half up. */
function divRound(numerator: bigint, denominator: bigint): bigint {
  return (2n * numerator + denominator) / (2n * denominator);
}

/** Millionths as a decimal string with 6 places: 1500000n -> "1.500000". */
export function formatMicros(micros: bigint): string {
  const sign = micros < 0n ? '-' : '';
  const abs = micros < 0n ? -micros : micros;
  return `${sign}${abs / MICROS}.${(abs % MICROS).toString().padStart(6, '0')}`;
}

/** The part of `[from, to)` inside the month and before `now`, in whole milliseconds (0 if none). */
function overlapMs(from: Date, to: Date | null, month: BillingMonth, now: Date): bigint {
  const lower = Math.max(from.getTime(), month.start.getTime());
  const upper = Math.min(to?.getTime() ?? Infinity, month.end.getTime(), now.getTime());
  return upper > lower ? BigInt(upper - lower) : 0n;
}

/**
 * The month's lines, in a stable order (component, source):
 * - `compute`: one line per usage period overlapping the month; quantity = instance-hours within
 *   the month (a running period up to `now`), unit price = the period's hourly cost.
 * - `subscription`: one line per subscription row overlapping the month; quantity = the fraction
 *   of the month the level was held (up to `now`), unit price = the level's monthly price (FREE: 0).
 */
export function rateMonth(input: RatingInput): RatedLine[] {
  const { month, now } = input;
  const lines: RatedLine[] = [];
  for (const period of input.periods) {
    const ms = overlapMs(period.startedAt, period.endedAt, month, now);
    if (ms === 0n) continue;
    const price = toMicros(period.hourlyCost);
    lines.push({
      component: BillingComponents.Compute,
      sourceId: period.id,
      quantity: formatMicros(divRound(ms * MICROS, MS_PER_HOUR)),
      unit: COMPUTE_UNIT,
      unitPrice: formatMicros(price),
      amount: formatMicros(divRound(ms * price, MS_PER_HOUR)),
    });
  }
  const monthMs = BigInt(month.end.getTime() - month.start.getTime());
  for (const subscription of input.subscriptions) {
    const ms = overlapMs(subscription.validFrom, subscription.validTo, month, now);
    if (ms === 0n) continue;
    const price = toMicros(input.monthlyPrice(subscription.level));
    lines.push({
      component: BillingComponents.Subscription,
      sourceId: subscription.id,
      quantity: formatMicros(divRound(ms * MICROS, monthMs)),
      unit: SUBSCRIPTION_UNIT,
      unitPrice: formatMicros(price),
      amount: formatMicros(divRound(ms * price, monthMs)),
    });
  }
  return lines.sort((a, b) =>
    a.component === b.component ? a.sourceId.localeCompare(b.sourceId) : a.component.localeCompare(b.component),
  );
}
