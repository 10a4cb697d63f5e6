import type { BillingMonth } from './billing-month';

/**
 * Rating: turning a month's usage into priced lines. Pure and exact: times are whole milliseconds
 * and money is counted in micro-dollars with BigInt, so a line's amount is the exact product
 * rounded (half up) to 6 decimals, whatever the floating-point representation of the inputs.
 */

export const BillingComponents = {
  Compute: 'compute',
  Subscription: 'subscription',
  Storage: 'storage',
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

/** Storage one database held in the month: bytes × seconds over its samples (an exact integer). */
export interface RatableStorage {
  databaseId: string;
  byteSeconds: bigint;
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
  /** Storage held per database in the month (none: no storage lines). */
  storage?: RatableStorage[];
  /** US dollars per GB (10^9 bytes) held for a whole month. */
  storagePricePerGbMonth?: number;
  /** GB-months included per month on a level (FREE's allowance), prorated by the part of the month it is held. */
  includedStorageGb?: (level: string) => number;
  /**
   * When the workspace began to hold a level (its first row's start). Time after it that no row
   * covers (a closed subscription) is held to FREE, as the plan limits hold it: FREE's allowance.
   */
  heldSince?: Date;
}

/** The level a workspace without a current subscription (closed) is held to (SubscriptionLevel.Free). */
const LEVEL_WHEN_CLOSED = 'FREE';

export const COMPUTE_UNIT = 'instance-hour';
export const SUBSCRIPTION_UNIT = 'month';
export const STORAGE_UNIT = 'GB-month';
/** Line source of a level's included storage, per subscription row. */
const storageAllowanceSource = (subscriptionId: string) => `allowance:${subscriptionId}`;
/** Line source of the included storage of the time without a subscription (after a close). */
const CLOSED_ALLOWANCE_SOURCE = 'allowance:closed';
const BYTES_PER_GB = 1_000_000_000n;

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
  lines.push(...rateStorage(input, monthMs));
  return lines.sort((a, b) =>
    a.component === b.component ? a.sourceId.localeCompare(b.sourceId) : a.component.localeCompare(b.component),
  );
}

/**
 * `storage`: one line per database, quantity = GB-months (byte-seconds / (10^9 × seconds in the
 * month): the average GB held over the whole month), unit price = the price per GB-month. Then
 * one negative line per subscription row whose level includes storage (FREE), quantity = the
 * included GB-months (prorated by the part of the month the level was held) that the month's
 * storage used up, and one more (`allowance:closed`) for the time since `heldSince` that no row
 * covers (after a close: FREE's); their amounts never exceed what the storage lines still owe, so
 * the component is never below 0.
 */
function rateStorage(input: RatingInput, monthMs: bigint): RatedLine[] {
  const held = (input.storage ?? []).filter((s) => s.byteSeconds > 0n);
  if (!held.length) return [];
  const price = toMicros(input.storagePricePerGbMonth ?? 0);
  // GB-months of X byte-seconds = X / (10^9 × monthMs / 1000) = X × 1000 / (10^9 × monthMs).
  const per = BYTES_PER_GB * monthMs;
  const lines: RatedLine[] = [];
  let remainingBytes = 0n;
  let remainingAmount = 0n;
  for (const s of held) {
    const amount = divRound(s.byteSeconds * 1000n * price, per);
    remainingBytes += s.byteSeconds;
    remainingAmount += amount;
    lines.push({
      component: BillingComponents.Storage,
      sourceId: s.databaseId,
      quantity: formatMicros(divRound(s.byteSeconds * 1000n * MICROS, per)),
      unit: STORAGE_UNIT,
      unitPrice: formatMicros(price),
      amount: formatMicros(amount),
    });
  }
  const holdings = [...input.subscriptions]
    .sort((a, b) => a.id.localeCompare(b.id))
    .map((r) => ({
      level: r.level,
      ms: overlapMs(r.validFrom, r.validTo, input.month, input.now),
      source: storageAllowanceSource(r.id),
    }));
  // Rows do not overlap one another: the time since heldSince that none covers was closed.
  const covered = holdings.reduce((sum, h) => sum + h.ms, 0n);
  const closedMs = input.heldSince ? overlapMs(input.heldSince, null, input.month, input.now) - covered : 0n;
  holdings.push({ level: LEVEL_WHEN_CLOSED, ms: closedMs, source: CLOSED_ALLOWANCE_SOURCE });
  for (const { level, ms, source } of holdings) {
    const included = toMicros(input.includedStorageGb?.(level) ?? 0);
    // included GB × 10^9 bytes × ms / 1000 = includedMicros × 10^3 × ms / 10^3 byte-seconds
    const allowance = included * ms;
    const applied = allowance < remainingBytes ? allowance : remainingBytes;
    if (applied <= 0n) continue;
    const computed = divRound(applied * 1000n * price, per);
    const amount = computed < remainingAmount ? computed : remainingAmount;
    remainingBytes -= applied;
    remainingAmount -= amount;
    lines.push({
      component: BillingComponents.Storage,
      sourceId: source,
      quantity: formatMicros(-divRound(applied * 1000n * MICROS, per)),
      unit: STORAGE_UNIT,
      unitPrice: formatMicros(price),
      amount: formatMicros(-amount),
    });
  }
  return lines;
}
