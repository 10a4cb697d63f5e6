import { isISO8601, ValidateBy, ValidationOptions } from 'class-validator';

/** A full date-time with an explicit offset: `2025-03-01T12:00:00Z`, `2025-03-01T13:00:00.5+01:00`. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;

/** The first moment an RFC 3339 date-time (four-digit year) cannot write in UTC, as answers are. */
const YEAR_10000 = Date.UTC(10000, 0, 1);

/**
 * Whether `value` is an ISO 8601 date-time with a time zone (a date alone, or a local time, is
 * ambiguous), from 1970 on (nothing this service records is older) and before the year 10000 in
 * UTC (answers write moments in UTC; `9999-12-31T23:59-14:00` would come back as `+010000-…`).
 */
export function isIsoDateTime(value: unknown): value is string {
  if (typeof value !== 'string' || !DATE_TIME.test(value) || !isISO8601(value, { strict: true })) return false;
  const time = Date.parse(value);
  return Number.isFinite(time) && time >= 0 && time < YEAR_10000;
}

/** class-validator rule for {@link isIsoDateTime}; the message shows the expected form. */
export function IsIsoDateTime(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isIsoDateTime',
      validator: {
        validate: (value) => isIsoDateTime(value),
        defaultMessage: (args) =>
          `${args?.property ?? 'value'} must be an ISO 8601 date-time with a time zone, from 1970 to 9999 (UTC), e.g. 2025-03-01T12:00:00Z`,
      },
    },
    options,
  );
}
