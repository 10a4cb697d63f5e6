import { isISO8601, ValidateBy, ValidationOptions } from 'class-validator';

/** A full date-time with an explicit offset: `2025-03-01T12:00:00Z`, `2025-03-01T13:00:00.5+01:00`. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;

/**
 * Whether `value` is an ISO 8601 date-time with a time zone (a date alone, or a local time, is
 * ambiguous), from 1970 on (nothing this service records is older).
 */
export function isIsoDateTime(value: unknown): value is string {
  if (typeof value !== 'string' || !DATE_TIME.test(value) || !isISO8601(value, { strict: true })) return false;
  const time = Date.parse(value);
  return Number.isFinite(time) && time >= 0;
}

/** class-validator rule for {@link isIsoDateTime}; the message shows the expected form. */
export function IsIsoDateTime(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isIsoDateTime',
      validator: {
        validate: (value) => isIsoDateTime(value),
        defaultMessage: (args) =>
          `${args?.property ?? 'value'} must be an ISO 8601 date-time with a time zone, from 1970 on, e.g. 2025-03-01T12:00:00Z`,
      },
    },
    options,
  );
}
