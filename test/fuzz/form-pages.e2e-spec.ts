import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { createClient, createHuman, pkce } from '../identity/identity-support';
import { createOwnDatabase, dropOwnDatabase } from '../support/own-database';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { ALL_QUEUES } from '../../src/queues/queue-names';
import { TestSmtpServer } from '../support/smtp';
import { createDeveloperWithToken, createTestApp, eventually, TestApp } from '../support/test-app';
import { describeCase, FuzzCase, FUZZ_RUNS, isErrorBody, runProperty } from './support/fuzz-cases';
import { hostileString, hostileUrlText, MALFORMED_PERCENT, nested, percentEncode } from './support/hostile-input';
import { RawHttp, RawResponse } from './support/raw-http';
import { routeCatalog } from './support/route-catalog';
import { TableChecksums } from './support/table-checksum';

/**
 * Property-based fuzzing of the pages and endpoints that read forms and queries rather than JSON:
 * the OAuth token endpoint, the login page (GET and POST /authorize) and the invite join pages.
 * Each case starts from a request that would succeed (a registered client, a real account, a live
 * invite) and makes one part hostile: a field's value, a repeated or unknown field, a missing
 * one, broken percent-encoding, a wrong content type, an oversized body.
 *
 * Rules: never a 5xx; an error is an HTML page or the JSON error body (the token endpoint adds
 * RFC 6749's `error` and `error_description`); a redirect has a Location; a refused request (4xx,
 * or a redirect carrying `error=`) changes no row of any table.
 */

// Generous, and longer for a longer hunt (FUZZ_RUNS=…): the cases of one property run in one test.
jest.setTimeout(Math.max(300_000, FUZZ_RUNS * 8_000));

type Fields = Record<string, string>;

interface Page {
  method: 'GET' | 'POST';
  path: string;
  /** A request that succeeds (or fails only for a reason unrelated to its shape). */
  base: () => Fields;
  /** Extra headers of the base request (the token endpoint's Basic client authentication). */
  headers?: () => Record<string, string>;
}

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

function encodeForm(pairs: [string, string][]): string {
  return pairs.map(([k, v]) => `${k}=${v}`).join('&');
}

const encoded = (fields: Fields): [string, string][] =>
  Object.entries(fields).map(([k, v]) => [percentEncode(k), percentEncode(v)]);

/** One thing wrong with a form or query built from `base`. */
type Pairs = [string, string][];
type Hostile = { label: string; pairs: Pairs };

function hostilePairs(base: Fields): fc.Arbitrary<{ label: string; pairs: Pairs }> {
  const names = Object.keys(base);
  const name = fc.constantFrom(...names);
  const rest = (field: string) => encoded(base).filter(([k]) => k !== percentEncode(field));
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc.tuple(name, hostileUrlText).map(([field, value]): Hostile => ({
        label: `${field} = ${value.slice(0, 80)}`,
        pairs: [...rest(field), [percentEncode(field), value]],
      })),
    },
    {
      weight: 2,
      arbitrary: fc.tuple(name, hostileUrlText).map(([field, value]): Hostile => ({
        label: `${field} repeated`,
        pairs: [...encoded(base), [percentEncode(field), value]],
      })),
    },
    {
      weight: 2,
      arbitrary: fc.subarray(names, { minLength: 1 }).map((missing): Hostile => ({
        label: `without ${missing.join(', ')}`,
        pairs: encoded(base).filter(([k]) => !missing.map(percentEncode).includes(k)),
      })),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.oneof(
            hostileString.filter((s) => s.length < 100).map(percentEncode),
            fc.constantFrom('__proto__', 'constructor', '__proto__[polluted]', 'a[b][c]', 'x[]', ...MALFORMED_PERCENT),
          ),
          hostileUrlText,
        )
        .map(([key, value]): Hostile => ({
          label: `unknown field ${key.slice(0, 60)}`,
          pairs: [...encoded(base), [key, value]],
        })),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(name, fc.constantFrom(...MALFORMED_PERCENT)).map(([field, broken]): Hostile => ({
        label: `${field} with a broken escape in its name`,
        pairs: [...rest(field), [`${percentEncode(field)}${broken}`, 'x']],
      })),
    },
  );
}

function pageCase(page: Page): fc.Arbitrary<FuzzCase> {
  const headers = () => page.headers?.() ?? {};
  if (page.method === 'GET') {
    return fc.oneof(
      { weight: 1, arbitrary: fc.constant(null).map(() => getCase(page, 'valid request', encoded(page.base()))) },
      {
        weight: 8,
        arbitrary: fc
          .constant(null)
          .chain(() => hostilePairs(page.base()))
          .map(({ label, pairs }) => getCase(page, label, pairs)),
      },
    );
  }
  const post = (label: string, body: string, contentType: Record<string, string> = FORM): FuzzCase => ({
    label,
    method: 'POST',
    path: page.path,
    headers: { ...headers(), ...contentType },
    body,
  });
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant(null).map(() => post('valid request', encodeForm(encoded(page.base())))) },
    {
      weight: 8,
      arbitrary: fc
        .constant(null)
        .chain(() => hostilePairs(page.base()))
        .map(({ label, pairs }) => post(label, encodeForm(pairs))),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.constantFrom<Record<string, string>>(
            {},
            { 'Content-Type': 'application/json' },
            { 'Content-Type': 'text/plain' },
            { 'Content-Type': 'multipart/form-data; boundary=x' },
            { 'Content-Type': 'application/x-www-form-urlencoded; charset=utf-16' },
            { 'Content-Type': 'application/x-www-form-urlencoded; charset=no-such-charset' },
            { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Encoding': 'gzip' },
            { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Encoding': 'no-such-coding' },
          ),
          fc.boolean(),
        )
        .map(([contentType, asJson]) =>
          post(
            `content type ${JSON.stringify(contentType)}${asJson ? ' with a JSON body' : ''}`,
            asJson ? JSON.stringify(page.base()) : encodeForm(encoded(page.base())),
            contentType,
          ),
        ),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(
          '{"a":',
          '{"__proto__":{"polluted":true}}',
          '[1,2]',
          'null',
          '"x"',
          '{"code":{"a":{"a":{"a":1}}}}',
        )
        .map((text) => post(`JSON body ${text}`, text, { 'Content-Type': 'application/json' })),
    },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 110_000, max: 300_000 })
        .map((n) => post(`form of ${n} bytes`, encodeForm([...encoded(page.base()), ['pad', 'x'.repeat(n)]]))),
    },
  );
}

function getCase(page: Page, label: string, pairs: [string, string][]): FuzzCase {
  return { label, method: 'GET', path: `${page.path}?${encodeForm(pairs)}`, headers: page.headers?.() ?? {} };
}

describe('fuzzing the form pages: OAuth token endpoint, login page, invite join pages', () => {
  let t: TestApp;
  let databaseUrl: string;
  let http: RawHttp;
  let smtp: TestSmtpServer;
  let checksums: TableChecksums;
  let lastSnapshot: Record<string, string>;
  let pages: Page[];
  let total = 0;
  const statuses = new Map<string, number>();

  beforeAll(async () => {
    databaseUrl = await createOwnDatabase('fuzz_pages');
    smtp = await TestSmtpServer.start();
    t = await createTestApp({
      DATABASE_URL: databaseUrl,
      DATABASE_POOL_TARGET: '0',
      BILLING_RATING_INTERVAL_SECONDS: '86400',
      RATE_LIMIT_AUTH_PER_MINUTE: '1000000',
      SMTP_URL: smtp.url,
    });
    await t.app.listen(0, '127.0.0.1');
    http = RawHttp.of(t.app.getHttpServer());

    const human = await createHuman(t.app, 'fuzz-login');
    const redirectUri = 'http://localhost:7777/callback';
    const client = await createClient(t.app, { redirectUris: [redirectUri] });
    const basic = `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`;
    const owner = await createDeveloperWithToken(t.app);
    const ws = (await t.http.post('/workspaces').set(owner.auth).send({ name: 'Fuzzed pages' }).expect(201)).body as {
      slug: string;
    };
    const invite = await t.http
      .post(`/workspaces/${ws.slug}/invites`)
      .set(owner.auth)
      .send({ email: 'fuzz-joiner@example.test', programmatic: true })
      .expect(201);
    const inviteCode = (invite.body as { code: string }).code;
    await eventually(async () => {
      const [row] = await t.dataSource.query<{ state: string }[]>('SELECT state FROM invites WHERE id = $1', [
        (invite.body as { id: string }).id,
      ]);
      return row.state === 'EMAIL_SENT';
    });
    // From here on only the fuzzed requests write.
    const jobs = t.app.get(JobDispatcher);
    for (const queue of ALL_QUEUES) await jobs.queue(queue).pause(true);
    const authorization = () => {
      const { challenge } = pkce();
      return {
        response_type: 'code',
        client_id: 'nilecli',
        redirect_uri: 'http://localhost:1234/callback',
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: randomBytes(6).toString('hex'),
      };
    };
    pages = [
      {
        method: 'POST',
        path: '/oauth2/token',
        base: () => ({
          grant_type: 'client_credentials',
          client_id: client.clientId,
          client_secret: client.clientSecret!,
        }),
      },
      {
        method: 'POST',
        path: '/oauth2/token',
        base: () => ({
          grant_type: 'authorization_code',
          code: randomBytes(16).toString('base64url'),
          code_verifier: pkce().verifier,
          redirect_uri: redirectUri,
        }),
        headers: () => ({ Authorization: basic }),
      },
      {
        method: 'POST',
        path: '/oauth2/token',
        base: () => ({
          grant_type: 'refresh_token',
          refresh_token: randomBytes(24).toString('base64url'),
          scope: 'workspaces',
        }),
        headers: () => ({ Authorization: basic }),
      },
      { method: 'GET', path: '/authorize', base: authorization },
      {
        method: 'POST',
        path: '/authorize',
        base: () => ({ ...authorization(), email: human.email, password: human.password }),
      },
      {
        method: 'GET',
        path: '/invites/accept',
        base: () => ({ code: inviteCode, proof: randomBytes(8).toString('hex') }),
      },
      {
        method: 'POST',
        path: '/invites/join',
        base: () => ({ code: inviteCode, password: 'a password that is long enough', proof: 'x' }),
      },
    ];
    checksums = await TableChecksums.connect(databaseUrl);
    lastSnapshot = await checksums.snapshot();
  }, 120_000);

  afterAll(async () => {
    http?.close();
    await checksums?.close();
    await t?.close();
    await smtp?.close();
    if (databaseUrl) await dropOwnDatabase(databaseUrl);

    console.log(
      `fuzzed ${total} form requests (FUZZ_RUNS=${FUZZ_RUNS}); answers by kind of case: ${[...statuses]
        .sort()
        .map(([k, n]) => `${k}: ${n}`)
        .join(', ')}`,
    );
  });

  async function check(c: FuzzCase): Promise<void> {
    total++;
    const res: RawResponse = await http.send(c);
    const kind = `${c.path.split('?')[0]} ${res.status}`;
    statuses.set(kind, (statuses.get(kind) ?? 0) + 1);
    const problems: string[] = [];
    const type = res.headers['content-type'] ?? '';
    const location = res.headers.location ?? '';
    if (res.status >= 500) problems.push(`answered ${res.status}`);
    else if (res.status >= 400 && !type.startsWith('text/html') && !isErrorBody(res, ['error', 'error_description']))
      problems.push('an error that is neither a page nor the error body');
    else if (res.status >= 300 && res.status < 400 && !location) problems.push('a redirect without a Location');
    if ((Object.prototype as Record<string, unknown>).polluted !== undefined)
      problems.push('Object.prototype was polluted');
    const refused = res.status >= 400 || /[?&]error=/.test(location);
    const snapshot = await checksums.snapshot();
    if (refused) {
      const changes = TableChecksums.changes(lastSnapshot, snapshot);
      if (changes.length) problems.push(`a refused request changed rows:\n    ${changes.join('\n    ')}`);
    }
    lastSnapshot = snapshot;
    if (problems.length) throw new Error(`${problems.join('; ')}\n${describeCase(c, res)}`);
  }

  it('covers every public form route of the router table', () => {
    const fuzzed = new Set(pages.map((p) => `${p.method} ${p.path}`));
    const catalog = routeCatalog(t.app);
    // The routes the OpenAPI document leaves out (the HTML pages) and the one that takes a form.
    const formRoutes = catalog
      .filter((r) => (!r.documented && !r.path.startsWith('/docs')) || r.path === '/oauth2/token')
      .map((r) => `${r.method} ${r.path}`);
    expect([...fuzzed].sort()).toEqual([...new Set(formRoutes)].sort());
  });

  it('answers hostile forms and queries with a page, the error body or a redirect, never a 5xx; refused requests change no row', async () => {
    const failures: string[] = [];
    // FUZZ_RUNS per page: a login or join attempt costs a full scrypt hash (N=2^17), even with an
    // unknown e-mail, so these cases are the suite's slowest.
    for (const [i, page] of pages.entries()) {
      const failure = await runProperty(`${page.method} ${page.path} #${i}`, pageCase(page), check, FUZZ_RUNS);
      if (failure) failures.push(failure);
    }
    expect(failures).toEqual([]);
  });

  it('answers JSON bodies nested thousands of levels deep with a 4xx, never a 5xx (the nesting limit)', async () => {
    const failures: string[] = [];
    for (const [i, page] of pages.filter((p) => p.method === 'POST').entries()) {
      const arbitrary = fc
        .tuple(
          fc.constantFrom(...Object.keys(page.base())),
          fc.constantFrom('object', 'array'),
          fc.integer({ min: 1500, max: 6000 }),
        )
        .map(([field, kind, depth]): FuzzCase => ({
          label: `JSON body with ${field} nested ${depth} ${kind === 'object' ? 'objects' : 'arrays'} deep`,
          method: 'POST',
          path: page.path,
          headers: { ...(page.headers?.() ?? {}), 'Content-Type': 'application/json' },
          body: `{${Object.entries(page.base())
            .filter(([k]) => k !== field)
            .map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)},`)
            .join('')}${JSON.stringify(field)}:${nested(kind, depth)}}`,
        }));
      const failure = await runProperty(
        `${page.method} ${page.path} #${i} nesting`,
        arbitrary,
        check,
        Math.max(2, FUZZ_RUNS / 10),
      );
      if (failure) failures.push(failure);
    }
    expect(failures).toEqual([]);
  });
});
