/**
 * A whole number written in decimal digits (an optional sign; whitespace around it ignored), or
 * undefined for anything else. Not Number(): it reads '' and ' ' as 0, '0x50' as 80 and '1e3' as
 * 1000, so a blank or mistyped setting would quietly become another number. Beyond the safe
 * integers the value read would not be the one written, so those are refused too.
 * No imports: the CLI reads it before anything else has loaded.
 */
export function parseDecimalInteger(text: string): number | undefined {
  const trimmed = text.trim();
  if (!/^[+-]?\d+$/.test(trimmed)) return undefined;
  const value = Number(trimmed);
  if (!Number.isSafeInteger(value)) return undefined;
  return value === 0 ? 0 : value; // '-0' is 0
}

/**
 * A transform's reading of a whole number given as text (a setting, a query parameter): its value
 * when written in decimal, else the text as given, for the validator to refuse and name.
 */
export function decimalIntegerOrAsIs(value: unknown): unknown {
  return typeof value === 'string' ? (parseDecimalInteger(value) ?? value) : value;
}

/** A number written in decimal (digits with an optional fraction, an optional sign), or undefined. */
export function parseDecimalNumber(text: string): number | undefined {
  const trimmed = text.trim();
  return /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)$/.test(trimmed) ? Number(trimmed) : undefined;
}
