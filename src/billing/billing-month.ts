/** A calendar month in UTC, the unit of billing: `[start, end)`. */
export interface BillingMonth {
  /** `YYYY-MM` */
  ym: string;
  start: Date;
  end: Date;
}

const YM = /^(\d{4})-(0[1-9]|1[0-2])$/;
/** Billing starts with the Unix epoch; earlier months cannot hold usage. */
const FIRST_YEAR = 1970;

export const YM_FORMAT_MESSAGE = 'ym must be a year and month in the form YYYY-MM (e.g. 2025-03), from 1970-01';

function utc(year: number, monthIndex: number): Date {
  const date = new Date(0);
  date.setUTCFullYear(year, monthIndex, 1);
  return date;
}

/** The month named by `ym`, or null when `ym` is not a `YYYY-MM` month from 1970-01 on. */
export function parseBillingMonth(ym: string): BillingMonth | null {
  const match = YM.exec(ym);
  if (!match) return null;
  const year = Number(match[1]);
  const month = Number(match[2]);
  if (year < FIRST_YEAR) return null;
  return { ym, start: utc(year, month - 1), end: utc(year, month) };
}

/** The month (UTC) that contains `at`. */
export function billingMonthOf(at: Date): BillingMonth {
  const ym = `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, '0')}`;
  return parseBillingMonth(ym)!;
}

/** The month before `month`. */
export function previousBillingMonth(month: BillingMonth): BillingMonth {
  return billingMonthOf(new Date(month.start.getTime() - 1));
}
