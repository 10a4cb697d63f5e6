import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';

/**
 * Narrows `query` to rows whose period `[start, end)` (`end` NULL while the period is open) overlaps
 * `[from, to)`: the one overlap rule of billing and usage, for subscriptions and compute periods.
 * `start` and `end` are the aliased column names (`s.valid_from`).
 */
export function overlappingPeriod<T extends ObjectLiteral>(
  query: SelectQueryBuilder<T>,
  start: string,
  end: string,
  from: Date,
  to: Date,
): SelectQueryBuilder<T> {
  return query.andWhere(`${start} < :to`, { to }).andWhere(`(${end} IS NULL OR ${end} > :from)`, { from });
}
