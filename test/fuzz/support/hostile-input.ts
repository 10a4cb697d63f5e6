import fc from 'fast-check';
import type { DtoField, DtoShape } from './route-catalog';

/**
 * Generators of hostile input. JSON is built as raw text (a value is its JSON source), so the
 * suite can send what JSON.stringify never writes: duplicate keys, own `__proto__` keys, numbers
 * that overflow to Infinity, malformed documents.
 */

export const SQL_AND_SHELL = [
  "' OR '1'='1",
  "'; DROP TABLE developers; --",
  '"; SELECT pg_sleep(10); --',
  "x' UNION SELECT password_hash FROM developers --",
  '$1',
  '%',
  '_',
  '\\',
  '\\x00',
  "E'\\\\x41'",
  '$$; SELECT 1; $$',
  '$(id)',
  '`id`',
  '; rm -rf / #',
  '| cat /etc/passwd',
  '&& shutdown -h now',
  '../../../etc/passwd',
  '..%2F..%2Fetc%2Fpasswd',
  '%s%s%s%n',
  '{{7*7}}',
  '${7*7}',
  '<script>alert(1)</script>',
  '\r\nX-Injected: 1',
  'null',
  'undefined',
  'NaN',
  'Infinity',
  '-0',
  '0x10',
  '1e309',
  'true',
  '[object Object]',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
];

export const MALFORMED_DATES = [
  '2025-13-45T25:61:61Z',
  '0000-00-00T00:00:00Z',
  '2025-03-01',
  '2025-03-01T00:00:00',
  '9999-12-31T23:59:59Z',
  '+275760-09-13T00:00:00Z',
  '+275760-09-13T00:00:00.001Z',
  '-000001-01-01T00:00:00Z',
  '1969-12-31T23:59:59Z',
  '2025-02-30T00:00:00Z',
  '2025-03-01T00:00:00+25:00',
  '2025-03-01T24:00:00Z',
  '2025-03-01T00:00:60Z',
  '2025-03-01T00:00:00.1234567891234Z',
  '2025-03-01T00:00:00Z ',
  ' 2025-03-01T00:00:00Z',
  '2025-03-01t00:00:00z',
  'now',
  '1700000000',
  '2025-03',
  '2025-00',
  '0000-01',
  '99999-01',
];

const UNICODE = [
  '\u202egnp.exe',
  '\ufeffname',
  'ǅ',
  '👩‍👩‍👧‍👦',
  'İstanbul',
  'ß',
  'ﬃ',
  'ａｂｃ',
  'e\u0301\u0301\u0301',
  '\u200b',
  '\u00a0',
  '名前',
  'ملف',
  '\u0085',
  '\u2028\u2029',
  '\ud83d\ude00',
];

/** Strings: empty, huge, Unicode, NUL, lone surrogates, metacharacters, dates that are not. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('', ' ', '\t', '\n'),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(...UNICODE),
  fc.constantFrom('\u0000', 'a\u0000b', '\u0000\u0000\u0000'),
  fc.constantFrom('\ud800', 'a\udfffb', '\udc00\ud800', '\udbff'),
  fc.constantFrom(...SQL_AND_SHELL),
  fc.constantFrom(...MALFORMED_DATES),
  fc.integer({ min: 64, max: 5000 }).map((n) => 'a'.repeat(n)),
  fc.integer({ min: 20_000, max: 90_000 }).map((n) => 'é'.repeat(n / 2)),
);

/** Numbers as JSON source: out of range, overflowing to Infinity, underflowing, fractional, huge. */
export const hostileNumber: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '0',
    '-1',
    '-0',
    '0.5',
    '721',
    '1001',
    '2147483648',
    '-2147483649',
    '9007199254740993',
    '1e308',
    '-1e308',
    '1e400',
    '-1e400',
    '1e-400',
    '123456789012345678901234567890',
    '0.1e1',
    '1E2',
  ),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
);

/** Any JSON value as source text, hostile in type or content. */
export const hostileJsonValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: hostileString.map((s) => JSON.stringify(s)) },
  { weight: 2, arbitrary: hostileNumber },
  { weight: 1, arbitrary: fc.constantFrom('true', 'false', 'null', '[]', '{}', '[null]', '[""]', '{"a":1}') },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.array(hostileString, { maxLength: 4 }).map((a) => JSON.stringify(a)) },
);

const hex = fc.stringMatching(/^[0-9a-f]{8}$/);

/**
 * A value its field's rules accept, read from the DTO metadata, so a body can be valid but for
 * the one thing a case changes. Rules the fuzzer does not know get a plain string.
 */
export function validValue(field: DtoField): fc.Arbitrary<unknown> {
  const rule = (name: string) => field.rules.find((r) => r.name === name);
  const num = (name: string) => rule(name)?.constraints[0] as number | undefined;
  const isIn = rule('isIn');
  if (isIn) return fc.constantFrom(...(isIn.constraints[0] as unknown[]));
  const isEnum = rule('isEnum');
  if (isEnum) return fc.constantFrom(...Object.values(isEnum.constraints[0] as object));
  if (rule('isDatabaseName')) return hex.map((h) => `fz_${h}`);
  if (rule('isEmail')) return hex.map((h) => `fz-${h}@example.test`);
  if (rule('isUUID')) return fc.uuid({ version: 4 });
  if (rule('isBoolean')) return fc.boolean();
  if (rule('isIsoDateTime')) {
    return fc
      .integer({ min: 1, max: 24 * 30 })
      .map((hours) => new Date(Date.now() + hours * 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z'));
  }
  if (rule('isInt')) return fc.integer({ min: num('min') ?? 0, max: num('max') ?? 1000 });
  const length = rule('length');
  const min = num('minLength') ?? (length?.constraints[0] as number | undefined) ?? 1;
  const max = Math.min(num('maxLength') ?? (length?.constraints[1] as number | undefined) ?? 40, 40);
  return fc.stringMatching(/^[a-z][a-z0-9 ]*$/).filter((s) => s.length >= min && s.length <= max);
}

/** A body the DTO's rules accept (required fields always, optional ones sometimes), as JS values. */
export function validBody(dto: DtoShape): fc.Arbitrary<Record<string, unknown>> {
  const required = Object.fromEntries(dto.fields.filter((f) => !f.optional).map((f) => [f.name, validValue(f)]));
  const optional = Object.fromEntries(dto.fields.filter((f) => f.optional).map((f) => [f.name, validValue(f)]));
  return fc.tuple(fc.record(required), fc.record(optional, { requiredKeys: [] })).map(([r, o]) => ({ ...r, ...o }));
}

/** JSON object source from [key, value source] pairs: keys may repeat and may be `__proto__`. */
export function objectSource(entries: [string, string][]): string {
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;
}

export const entriesOf = (body: Record<string, unknown>): [string, string][] =>
  Object.entries(body).map(([k, v]) => [k, JSON.stringify(v)]);

export const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype'];

/** `{"a":{"a":…}}` or `[[…]]`, `depth` levels deep, as source text. */
export function nested(kind: 'object' | 'array', depth: number): string {
  return kind === 'object' ? '{"a":'.repeat(depth) + '1' + '}'.repeat(depth) : '['.repeat(depth) + ']'.repeat(depth);
}

export const MALFORMED_JSON = [
  '',
  '{',
  '}',
  '{"a":}',
  '{"a":1,}',
  "{'a':1}",
  '{a:1}',
  '{"a":1}garbage',
  '{"a":1}{"b":2}',
  '\ufeff{}',
  '{"a":"\\x41"}',
  '{"a":"\\u12"}',
  '{"a":"line\nbreak"}',
  '{"a":NaN}',
  '{"a":Infinity}',
  '{"a":undefined}',
  '{"a":01}',
  '{"a":.5}',
  '{"a":+1}',
  '{"a" 1}',
  '[1,2',
  'nul',
  '\u0000',
  '/* comment */ {}',
];

/** What a percent-encoder must not produce: invalid escapes and UTF-8 that is not (surrogates, overlongs). */
export const MALFORMED_PERCENT = [
  '%',
  '%z',
  '%zz',
  '%E0%A4%A',
  '%ED%A0%80',
  '%C0%AF',
  '%ff%fe',
  '%00',
  '%2F',
  '%2e%2e',
  '%5C',
];

/** Percent-encodes every byte of the UTF-8 form that is not unreserved (lone surrogates become U+FFFD). */
export function percentEncode(value: string): string {
  return [...Buffer.from(value, 'utf8')]
    .map((b) =>
      /[A-Za-z0-9\-._~]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');
}

/** A path segment or query value: encoded hostile text, or encodings that are themselves broken. */
export const hostileUrlText: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: hostileString.filter((s) => s.length <= 2000).map(percentEncode) },
  { weight: 1, arbitrary: fc.constantFrom(...MALFORMED_PERCENT) },
  { weight: 1, arbitrary: fc.constantFrom('.', '..', '~', '-', '0', '00000000-0000-0000-0000-000000000000') },
);
