import fc from 'fast-check';
import { createHash } from 'node:crypto';
import {
  entriesOf,
  hostileJsonValue,
  hostileString,
  hostileUrlText,
  MALFORMED_JSON,
  nested,
  objectSource,
  percentEncode,
  validBody,
  validValue,
} from './hostile-input';
import type { CatalogRoute, DtoShape } from './route-catalog';
import type { RawRequest, RawResponse } from './raw-http';

/** Cases per route and property in CI; `FUZZ_RUNS=…` asks for more (or fewer). */
export const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 50);
/** The fixed seed of CI runs; `FUZZ_SEED=…` replays or explores another sequence. */
export const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 20261123);

/** A seed per property, stable when routes are added elsewhere: the base seed mixed with the property's name. */
export function seedOf(name: string): number {
  return (FUZZ_SEED ^ createHash('sha256').update(name).digest().readInt32BE(0)) | 0;
}

/**
 * Runs a property with the fixed seed; resolves to null when it holds, else to one readable
 * failure: the property's name, how to replay it, and the failing case's own message (never
 * fast-check's dump of the case, which would print the bearer token). FUZZ_SHRINK=1 shrinks the
 * counterexample first (slower).
 */
export async function runProperty<T>(
  name: string,
  arbitrary: fc.Arbitrary<T>,
  predicate: (value: T) => Promise<void>,
  runs = FUZZ_RUNS,
): Promise<string | null> {
  const seed = seedOf(name);
  const numRuns = Math.max(1, Math.round(runs));
  const details = await fc.check(fc.asyncProperty(arbitrary, predicate), {
    seed,
    numRuns,
    endOnFailure: !process.env.FUZZ_SHRINK,
  });
  if (!details.failed) return null;
  const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  return `${name} (case ${details.numRuns} of ${numRuns}; replay with FUZZ_SEED=${FUZZ_SEED}): ${error}`;
}

export interface FuzzCase extends RawRequest {
  /** What the case does, for the failure message. */
  label: string;
  body?: string;
}

/** Values of path parameters that exist (a workspace the caller belongs to, its database…). */
export type Fixtures = Record<string, string>;

const JSON_TYPE = { 'Content-Type': 'application/json' };

/** A value of a path parameter that names nothing (for DELETE, which must not destroy the fixtures). */
function absentValue(param: string): string {
  return /Id$/.test(param) ? '7f0e4e8a-2c3b-4d5e-9f60-123456789abc' : `fz_absent_${param}`;
}

function fillPath(route: CatalogRoute, fixtures: Fixtures, override?: [string, string]): string {
  const last = route.pathParams[route.pathParams.length - 1];
  return route.path.replace(/:([A-Za-z]+)/g, (_, param: string) => {
    if (override && override[0] === param) return override[1];
    if (route.method === 'DELETE' && param === last) return absentValue(param);
    return percentEncode(fixtures[param] ?? `fz_${param}`);
  });
}

function queryString(pairs: [string, string][]): string {
  return pairs.length ? `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}` : '';
}

const encodedPairs = (values: Record<string, unknown>): [string, string][] =>
  Object.entries(values).map(([k, v]) => [percentEncode(k), percentEncode(String(v))]);

/** A valid query of the route's query DTO (or of its single query parameters), as encoded pairs. */
function validQuery(route: CatalogRoute): fc.Arbitrary<[string, string][]> {
  if (route.query) return validBody(route.query).map(encodedPairs);
  return fc.constant([]);
}

const queryFields = (route: CatalogRoute): string[] => [
  ...(route.query?.fields.map((f) => f.name) ?? []),
  ...route.queryParams,
];

/** One thing wrong with the query: a hostile value, a repeated or bracketed parameter, an unknown one. */
function hostileQuery(route: CatalogRoute): fc.Arbitrary<{ label: string; pairs: [string, string][] }> {
  const names = queryFields(route);
  const name = names.length ? fc.constantFrom(...names) : fc.constant('unknown');
  return fc
    .tuple(validQuery(route), name, hostileUrlText, hostileUrlText, fc.nat(3))
    .map(([valid, field, a, b, kind]) => {
      const rest = valid.filter(([k]) => k !== field);
      switch (kind) {
        case 0:
          return { label: `query ${field} hostile`, pairs: [...rest, [field, a]] };
        case 1:
          return { label: `query ${field} repeated`, pairs: [...rest, [field, a], [field, b]] };
        case 2:
          return {
            label: `query ${field}[] / ${field}[x]`,
            pairs: [...rest, [`${field}%5B%5D`, a], [`${field}[x]`, b]],
          };
        default:
          return {
            label: 'query with an unknown parameter',
            pairs: [...valid, [percentEncode(`x${b.slice(0, 20)}`), a]],
          };
      }
    });
}

/** One thing wrong with the body of a route that takes a DTO (or none at all). */
function hostileBody(
  dto: DtoShape | undefined,
): fc.Arbitrary<{ label: string; headers: Record<string, string>; body?: string }> {
  const valid = dto ? validBody(dto) : fc.constant({});
  const fieldNames = dto?.fields.map((f) => f.name) ?? [];
  const field = fieldNames.length ? fc.constantFrom(...fieldNames) : fc.constant('name');
  const json = (label: string, body: string) => ({ label, headers: JSON_TYPE, body });
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .tuple(valid, field, hostileJsonValue)
        .map(([b, f, v]) =>
          json(`body ${f} = ${v.slice(0, 80)}`, objectSource([...entriesOf(b).filter(([k]) => k !== f), [f, v]])),
        ),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(valid, fc.subarray(fieldNames, { minLength: Math.min(1, fieldNames.length) }))
        .map(([b, missing]) =>
          json(`body without ${missing.join(', ')}`, objectSource(entriesOf(b).filter(([k]) => !missing.includes(k)))),
        ),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          valid,
          fc.array(
            fc.tuple(
              hostileString.filter((s) => s.length < 200),
              hostileJsonValue,
            ),
            { minLength: 1, maxLength: 3 },
          ),
        )
        .map(([b, extra]) =>
          json(
            `body with unknown ${extra.map(([k]) => JSON.stringify(k)).join(', ')}`,
            objectSource([...entriesOf(b), ...extra]),
          ),
        ),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(valid, field, hostileJsonValue)
        .map(([b, f, v]) => json(`body with ${f} twice`, objectSource([...entriesOf(b), [f, v]]))),
    },
    { weight: 2, arbitrary: hostileJsonValue.map((v) => json(`body ${v.slice(0, 80)}`, v)) },
    {
      weight: 2,
      arbitrary: fc
        .oneof(
          fc.constantFrom(...MALFORMED_JSON),
          fc.tuple(valid, fc.nat()).map(([b, n]) => {
            const text = JSON.stringify(b);
            return text.slice(0, n % Math.max(1, text.length));
          }),
        )
        .map((text) => json(`malformed JSON ${JSON.stringify(text.slice(0, 60))}`, text)),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          valid,
          fc.constantFrom<Record<string, string>>(
            {},
            { 'Content-Type': 'text/plain' },
            { 'Content-Type': 'application/xml' },
            { 'Content-Type': 'application/x-www-form-urlencoded' },
            { 'Content-Type': 'multipart/form-data; boundary=x' },
            { 'Content-Type': 'application/json; charset=utf-16' },
            { 'Content-Type': 'application/json; charset=latin1' },
            { 'Content-Type': 'application/json; charset=no-such-charset' },
            { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
            { 'Content-Type': 'application/json', 'Content-Encoding': 'deflate' },
            { 'Content-Type': 'application/json', 'Content-Encoding': 'br' },
            { 'Content-Type': 'application/json', 'Content-Encoding': 'no-such-coding' },
            { 'Content-Type': '*/*' },
            { 'Content-Type': 'application/json;;;' },
            { 'Content-Type': 'ñ/ñ' },
          ),
        )
        .map(([b, headers]) => ({
          label: `content type ${JSON.stringify(headers)}`,
          headers,
          body: JSON.stringify(b),
        })),
    },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 110_000, max: 300_000 })
        .map((n) => json(`body of ${n} bytes`, JSON.stringify({ [fieldNames[0] ?? 'name']: 'x'.repeat(n) }))),
    },
  );
}

/**
 * One case against a route: everything valid (the caller is a member, the path names real
 * resources), or exactly one part hostile: a path parameter, the query, or the body.
 */
export function caseFor(
  route: CatalogRoute,
  fixtures: () => Fixtures,
  auth: Record<string, string>,
): fc.Arbitrary<FuzzCase> {
  const sendsBody = ['POST', 'PUT', 'PATCH'].includes(route.method);
  const validCase = validQuery(route).chain((pairs) =>
    (route.body ? validBody(route.body) : fc.constant(undefined)).map((body) => ({
      label: 'valid request',
      method: route.method,
      path: fillPath(route, fixtures()) + queryString(pairs),
      headers: body ? { ...auth, ...JSON_TYPE } : auth,
      body: body ? JSON.stringify(body) : undefined,
    })),
  );
  const options: fc.WeightedArbitrary<FuzzCase>[] = [{ weight: 1, arbitrary: validCase }];
  if (route.pathParams.length) {
    options.push({
      weight: 3,
      arbitrary: fc
        .tuple(fc.constantFrom(...route.pathParams), hostileUrlText, validQuery(route))
        .map(([param, value, pairs]) => ({
          label: `path :${param} = ${value.slice(0, 80)}`,
          method: route.method,
          path: fillPath(route, fixtures(), [param, value]) + queryString(pairs),
          headers: auth,
        })),
    });
  }
  options.push({
    weight: route.query || route.queryParams.length ? 4 : 1,
    arbitrary: hostileQuery(route).map(({ label, pairs }) => ({
      label,
      method: route.method,
      path: fillPath(route, fixtures()) + queryString(pairs),
      headers: auth,
    })),
  });
  if (sendsBody || route.takesBody) {
    options.push({
      weight: 8,
      arbitrary: hostileBody(route.body).map(({ label, headers, body }) => ({
        label,
        method: route.method,
        path: fillPath(route, fixtures()),
        headers: { ...auth, ...headers },
        body,
      })),
    });
  }
  return fc.oneof(...options);
}

/** A body with one field nested `depth` levels deep (objects or arrays), in place of a valid value. */
export function nestingCase(
  route: CatalogRoute,
  fixtures: () => Fixtures,
  auth: Record<string, string>,
): fc.Arbitrary<FuzzCase> {
  const dto = route.body!;
  return fc
    .tuple(
      validBody(dto),
      fc.constantFrom(...dto.fields.map((f) => f.name)),
      fc.constantFrom('object', 'array'),
      fc.integer({ min: 1500, max: 6000 }),
    )
    .map(([body, field, kind, depth]) => {
      const inner = nested(kind, depth);
      return {
        label: `body ${field} nested ${depth} ${kind === 'object' ? 'objects' : 'arrays'} deep`,
        method: route.method,
        path: fillPath(route, fixtures()),
        headers: { ...auth, ...JSON_TYPE },
        body: objectSource([...entriesOf(body).filter(([k]) => k !== field), [field, inner]]),
      };
    });
}

/** A valid body plus an own `__proto__`, `constructor` or `prototype` key (JSON.parse makes them own properties). */
export function prototypeKeyCase(
  route: CatalogRoute,
  fixtures: () => Fixtures,
  auth: Record<string, string>,
): fc.Arbitrary<FuzzCase> {
  return fc
    .tuple(
      validBody(route.body!),
      fc.constantFrom('__proto__', 'constructor', 'prototype'),
      fc.constantFrom('{}', '{"polluted":true}', '{"prototype":{"polluted":true}}', '1', '"x"', 'null', '[]'),
    )
    .map(([body, key, value]) => ({
      label: `body with own key ${key}: ${value}`,
      method: route.method,
      path: fillPath(route, fixtures()),
      headers: { ...auth, ...JSON_TYPE },
      body: objectSource([...entriesOf(body), [key, value]]),
    }));
}

/**
 * A valid body but for one field, given as JSON null. No field of the published API takes null:
 * an optional field is omitted or has a value, so null must be a 400 naming the field (never a
 * 500 from a service that tested `=== undefined`, nor a database constraint error).
 */
export function nullFieldCase(
  route: CatalogRoute,
  field: string,
  fixtures: () => Fixtures,
  auth: Record<string, string>,
): fc.Arbitrary<FuzzCase> {
  return validBody(route.body!).map((body) => ({
    label: `body ${field} = null`,
    method: route.method,
    path: fillPath(route, fixtures()),
    headers: { ...auth, ...JSON_TYPE },
    body: objectSource([...entriesOf(body).filter(([k]) => k !== field), [field, 'null']]),
  }));
}

export function describeCase(c: FuzzCase, res: RawResponse): string {
  const body =
    c.body === undefined
      ? ''
      : ` body ${JSON.stringify(c.body.length > 200 ? `${c.body.slice(0, 200)}…(${c.body.length} chars)` : c.body)}`;
  const path = c.path.length > 300 ? `${c.path.slice(0, 300)}…` : c.path;
  const headers = Object.entries(c.headers ?? {})
    .filter(([k]) => k !== 'Authorization')
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ');
  return `${c.label}\n  ${c.method} ${path}${headers ? ` [${headers}]` : ''}${body}\n  -> ${res.status} ${res.text.slice(0, 500)}`;
}

/** Whether the answer is `{errorCode, message, statusCode}` (and only that) with the response's status. */
export function isErrorBody(res: RawResponse, extraKeys: string[] = []): boolean {
  const body = res.json as Record<string, unknown> | undefined;
  if (!body || typeof body !== 'object' || Array.isArray(body)) return false;
  const keys = Object.keys(body).filter((k) => !extraKeys.includes(k));
  return (
    keys.length === 3 &&
    typeof body.errorCode === 'string' &&
    typeof body.message === 'string' &&
    body.statusCode === res.status
  );
}

export { validValue };

/** A bearer credential that must not pass, with what is wrong with it. */
export interface BadCredential {
  label: string;
  /** The Authorization header, or none at all. */
  header?: string;
}

/** A valid request in every other way, sent with a bad credential. */
export function badCredentialCase(
  route: CatalogRoute,
  fixtures: () => Fixtures,
  credentials: fc.Arbitrary<BadCredential>,
): fc.Arbitrary<FuzzCase> {
  return fc
    .tuple(credentials, route.body ? validBody(route.body) : fc.constant(undefined))
    .map(([credential, body]) => ({
      label: `credential: ${credential.label}`,
      method: route.method,
      path: fillPath(route, fixtures()),
      headers: {
        ...(credential.header === undefined ? {} : { Authorization: credential.header }),
        ...(body ? JSON_TYPE : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    }));
}
