import fc from 'fast-check';
import { sign } from 'jsonwebtoken';
import { randomUUID } from 'node:crypto';
import { AccessTokens } from '../../src/auth/access-tokens';
import { SigningKeys } from '../../src/auth/signing-keys';
import { AppConfig } from '../../src/config/app-config';
import { WarmPool } from '../../src/databases/warm-pool.service';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { ALL_QUEUES } from '../../src/queues/queue-names';
import { createReadyDatabase, createWorkspace } from '../databases/support';
import { waitForInstance } from '../compute/support';
import { createOwnDatabase, dropOwnDatabase } from '../support/own-database';
import { TestSmtpServer } from '../support/smtp';
import { createDeveloperWithToken, createTestApp, eventually, TestApp } from '../support/test-app';
import {
  BadCredential,
  badCredentialCase,
  caseFor,
  describeCase,
  Fixtures,
  FuzzCase,
  runProperty,
  FUZZ_RUNS,
  isErrorBody,
  nestingCase,
  nullFieldCase,
  prototypeKeyCase,
} from './support/fuzz-cases';
import { RawHttp, RawResponse } from './support/raw-http';
import { CatalogRoute, expressRoutes, routeCatalog } from './support/route-catalog';
import { TableChecksums } from './support/table-checksum';

/**
 * Property-based fuzzing of every JSON API route, generated from the router table and the DTO
 * metadata (see support/route-catalog.ts), so a new route or field is fuzzed without being listed.
 * The caller is a member of a workspace with a ready database, a credential, a compute instance,
 * an invite and a subscription, so valid path parameters reach the services. Each case makes one
 * part of a request hostile (a path parameter, the query, the body) or none.
 *
 * Rules: never a 5xx; a 4xx carries exactly `{errorCode, message, statusCode}`; a 2xx is one the
 * OpenAPI document lists; a rejected request changes no row of any table (row counts and an md5
 * of every table, in this spec's own database). The queues are paused once the fixtures are
 * ready, so only the requests write. Fixed seed; FUZZ_RUNS cases per route and property.
 */

const isBadRequest = (res: RawResponse) =>
  res.status === 400 && (res.json as { errorCode?: string } | undefined)?.errorCode === 'bad_request';

/** The HTML pages and the OAuth endpoints answer in their own shapes: test/fuzz/form-pages.e2e-spec.ts. */
const FORM_PAGES = new Set([
  'GET /authorize',
  'POST /authorize',
  'POST /oauth2/token',
  'GET /invites/accept',
  'POST /invites/join',
]);
/** Served by the Swagger module, not by a controller. */
const NOT_CONTROLLERS = /^(GET|POST) \/docs|\{\/\*splat\}$/;

// Generous, and longer for a longer hunt (FUZZ_RUNS=…): the cases of one property run in one test.
jest.setTimeout(Math.max(300_000, FUZZ_RUNS * 8_000));

describe('fuzzing every API route (generated from the router table and the DTO metadata)', () => {
  let t: TestApp;
  let databaseUrl: string;
  let smtp: TestSmtpServer;
  let http: RawHttp;
  let checksums: TableChecksums;
  let auth: { Authorization: string };
  let routes: CatalogRoute[];
  const fixtures: Fixtures = {};
  let databaseId: string;
  let lastSnapshot: Record<string, string>;
  let badCredentials: fc.Arbitrary<BadCredential>;
  let total = 0;
  const statuses = new Map<string, number>();

  beforeAll(async () => {
    databaseUrl = await createOwnDatabase('fuzz_api');
    smtp = await TestSmtpServer.start();
    t = await createTestApp({
      DATABASE_URL: databaseUrl,
      SMTP_URL: smtp.url,
      // Pre-built databases for the instant provisions (three an address an hour): with the queues
      // paused below, a provision without one waits for a build that never comes (503).
      DATABASE_POOL_TARGET: '3',
      BILLING_RATING_INTERVAL_SECONDS: '86400',
    });
    await t.app.listen(0, '127.0.0.1');
    http = RawHttp.of(t.app.getHttpServer());
    routes = routeCatalog(t.app);

    const owner = await createDeveloperWithToken(t.app);
    auth = owner.auth;
    const ws = await createWorkspace(t, owner.auth);
    const db = await createReadyDatabase(t, owner.auth, ws.slug, `fz_${Date.now().toString(36)}`);
    databaseId = db.id;
    const base = `/workspaces/${ws.slug}/databases/${db.name}`;
    const credential = await t.http.post(`${base}/credentials`).set(auth).expect(200);
    const instance = await t.http
      .post(`${base}/compute`)
      .set(auth)
      .send({ instanceSize: 'dc-small', instanceName: 'fuzzed' })
      .expect(202);
    const invite = await t.http
      .post(`/workspaces/${ws.slug}/invites`)
      .set(auth)
      .send({ email: 'fuzz-invitee@example.test' })
      .expect(201);
    const subscription = await t.http.post(`/workspaces/${ws.slug}/subscription`).set(auth).send({ level: 'FREE' });
    const current = await t.http.get(`/workspaces/${ws.slug}/subscription`).set(auth).expect(200);
    expect([201, 409]).toContain(subscription.status);
    await waitForInstance(t, auth, ws.slug, db.name, instance.body.instanceId, 'READY');
    await eventually(async () => {
      const [row] = await t.dataSource.query<{ state: string }[]>('SELECT state FROM invites WHERE id = $1', [
        invite.body.id,
      ]);
      return row.state === 'EMAIL_SENT';
    });
    const pool = t.app.get(WarmPool);
    for (const region of ['AWS_US_WEST_2', 'AWS_EU_CENTRAL_1'] as const) {
      // A refill job the fixtures set off may hold a server's refill turn (a refill that finds it
      // taken leaves the work to that one): refill until the builds under way are done.
      await eventually(async () => {
        await pool.refillRegion(region);
        return (await pool.readyCount(region)) >= 3;
      });
    }
    // From here on only the fuzzed requests write: jobs they owe wait in Redis.
    const jobs = t.app.get(JobDispatcher);
    for (const queue of ALL_QUEUES) await jobs.queue(queue).pause(true);

    Object.assign(fixtures, {
      workspaceSlug: ws.slug,
      databaseName: db.name,
      databaseId: db.id,
      credentialId: credential.body.id,
      instanceId: instance.body.instanceId,
      inviteId: invite.body.id,
      subscriptionId: current.body.id,
      developerId: owner.developer.id,
      ym: new Date().toISOString().slice(0, 7),
    });
    badCredentials = badCredentialsOf(t, owner.developer.id, owner.token);
    checksums = await TableChecksums.connect(databaseUrl);
    lastSnapshot = await checksums.snapshot();
  }, 180_000);

  afterAll(async () => {
    http?.close();
    await checksums?.close();
    await t?.close();
    await smtp?.close();
    if (databaseUrl) await dropOwnDatabase(databaseUrl);

    console.log(
      `fuzzed ${total} API requests (FUZZ_RUNS=${FUZZ_RUNS}); answers by kind of case: ${[...statuses]
        .sort()
        .map(([k, n]) => `${k}: ${n}`)
        .join(', ')}`,
    );
  });

  const apiRoutes = () => routes.filter((r) => !FORM_PAGES.has(`${r.method} ${r.path}`));

  /** Sends one case and checks every rule; a rename may move the fixture database, so its name is re-read. */
  async function check(
    route: CatalogRoute,
    c: FuzzCase,
    expectRejected?: (res: RawResponse) => string | null,
  ): Promise<void> {
    total++;
    const res = await http.send(c);
    const kind = `${c.label.split(' ')[0]} ${res.status}`;
    statuses.set(kind, (statuses.get(kind) ?? 0) + 1);
    const problems: string[] = [];
    if (res.status >= 500) problems.push(`answered ${res.status}`);
    else if (res.status >= 400 && !isErrorBody(res)) problems.push('a 4xx without the error body');
    else if (res.status < 400 && !(route.documented ?? []).includes(res.status))
      problems.push(
        `answered ${res.status}, which the OpenAPI document does not list (${route.documented?.join(', ')})`,
      );
    const extra = expectRejected?.(res);
    if (extra) problems.push(extra);
    if ((Object.prototype as Record<string, unknown>).polluted !== undefined)
      problems.push('Object.prototype was polluted');

    const snapshot = await checksums.snapshot();
    if (res.status >= 400) {
      const changes = TableChecksums.changes(lastSnapshot, snapshot);
      if (changes.length) problems.push(`a rejected request changed rows:\n    ${changes.join('\n    ')}`);
    } else if (route.method !== 'GET') {
      const [row] = await t.dataSource.query<{ name: string }[]>('SELECT name FROM databases WHERE id = $1', [
        databaseId,
      ]);
      fixtures.databaseName = row.name;
    }
    lastSnapshot = snapshot;
    if (problems.length) throw new Error(`${problems.join('; ')}\n${describeCase(c, res)}`);
  }

  it('finds every route of the router table in the controllers, with their DTOs', () => {
    const fromControllers = [...new Set(routes.map((r) => `${r.method} ${r.path}`))].sort();
    // Express also holds the catch-all that answers 405/404 (`{/*splat}`) and the Swagger module's routes.
    const fromExpress = [...new Set(expressRoutes(t.app))].filter((r) => !NOT_CONTROLLERS.test(r)).sort();
    expect(fromControllers).toEqual(fromExpress);
    expect(apiRoutes().length).toBeGreaterThan(30);
    // The catalog reads the DTOs: a few it must have found.
    const byKey = (key: string) => routes.find((r) => `${r.method} ${r.path}` === key);
    expect(
      byKey('POST /workspaces/:workspaceSlug/databases')
        ?.body?.fields.map((f) => f.name)
        .sort(),
    ).toEqual(['databaseName', 'region', 'sharded']);
    expect(
      byKey('GET /workspaces/:workspaceSlug/databases')
        ?.query?.fields.map((f) => f.name)
        .sort(),
    ).toEqual(['cursor', 'limit']);
    // Every API route is documented, so its 2xx answers can be checked.
    expect(
      apiRoutes()
        .filter((r) => !r.documented)
        .map((r) => `${r.method} ${r.path}`),
    ).toEqual([]);
  });

  it('sees any change to a row in the checksums (so an unchanged checksum means something)', async () => {
    const before = await checksums.snapshot();
    await t.dataSource.query(`UPDATE workspaces SET name = name || '!' WHERE slug = $1`, [fixtures.workspaceSlug]);
    const changed = await checksums.snapshot();
    await t.dataSource.query(`UPDATE workspaces SET name = left(name, -1) WHERE slug = $1`, [fixtures.workspaceSlug]);
    expect(TableChecksums.changes(before, changed)).toEqual([expect.stringMatching(/^public\.workspaces: /)]);
    expect(TableChecksums.changes(before, await checksums.snapshot())).toEqual([]);
  });

  it('answers hostile paths, queries and bodies with a 4xx error body or a documented 2xx, and rejected requests change no row', async () => {
    const failures: string[] = [];
    for (const route of apiRoutes()) {
      const failure = await runProperty(
        `${route.method} ${route.path}`,
        caseFor(route, () => fixtures, auth),
        (c) => check(route, c),
      );
      if (failure) failures.push(failure);
    }
    expect(failures).toEqual([]);
  });

  it('answers a missing, malformed, forged, expired or foreign bearer token with 401 on every route that needs one', async () => {
    const failures: string[] = [];
    for (const route of apiRoutes().filter((r) => r.documented?.includes(401))) {
      const failure = await runProperty(
        `${route.method} ${route.path} bad credentials`,
        badCredentialCase(route, () => fixtures, badCredentials),
        (c) =>
          check(route, c, (res) =>
            res.status === 401 && (res.json as { errorCode?: string } | undefined)?.errorCode === 'invalid_credentials'
              ? null
              : 'expected 401 invalid_credentials',
          ),
        Math.max(3, FUZZ_RUNS / 5),
      );
      if (failure) failures.push(failure);
    }
    expect(failures).toEqual([]);
  });

  it('answers bodies nested thousands of levels deep with 400 bad_request (a nesting limit) on every route with a body', async () => {
    const failures: string[] = [];
    for (const route of apiRoutes().filter((r) => r.body)) {
      const failure = await runProperty(
        `${route.method} ${route.path} nesting`,
        nestingCase(route, () => fixtures, auth),
        (c) => check(route, c, (res) => (isBadRequest(res) ? null : 'expected 400 bad_request')),
        Math.max(2, FUZZ_RUNS / 10),
      );
      if (failure) failures.push(failure);
    }
    expect(failures).toEqual([]);
  });

  it('answers JSON null in any body field, optional ones included, with 400 bad_request naming the field, on every route with a body', async () => {
    const failures: string[] = [];
    for (const route of apiRoutes().filter((r) => r.body)) {
      for (const { name } of route.body!.fields) {
        const failure = await runProperty(
          `${route.method} ${route.path} ${name} null`,
          nullFieldCase(route, name, () => fixtures, auth),
          (c) =>
            check(route, c, (res) =>
              isBadRequest(res) && String((res.json as { message?: unknown }).message).includes(name)
                ? null
                : `expected 400 bad_request naming ${name}`,
            ),
          Math.max(2, FUZZ_RUNS / 10),
        );
        if (failure) failures.push(failure);
      }
    }
    expect(failures).toEqual([]);
  });

  it('refuses own __proto__, constructor and prototype keys like any other unknown field (400) on every route with a body', async () => {
    const failures: string[] = [];
    for (const route of apiRoutes().filter((r) => r.body)) {
      const failure = await runProperty(
        `${route.method} ${route.path} prototype keys`,
        prototypeKeyCase(route, () => fixtures, auth),
        (c) => check(route, c, (res) => (isBadRequest(res) ? null : 'expected 400 bad_request')),
        Math.max(3, FUZZ_RUNS / 5),
      );
      if (failure) failures.push(failure);
    }
    expect(failures).toEqual([]);
  });
});

/**
 * Authorization headers that must all answer 401: none, other schemes, garbage, a tampered
 * signature, `alg: none`, HS256 signed with the public key (algorithm confusion), and tokens
 * signed with the real key but expired, not yet valid, for another audience or issuer, or naming
 * a developer that does not exist or is not a UUID (still a bad token, not an outage).
 */
function badCredentialsOf(t: TestApp, developerId: string, valid: string): fc.Arbitrary<BadCredential> {
  const keys = t.app.get(SigningKeys);
  const { JWT_ISSUER: issuer, JWT_AUDIENCE: audience } = t.app.get(AppConfig).env;
  const now = Math.floor(Date.now() / 1000);
  const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const claims = { sub: developerId, scope: '', iss: issuer, aud: audience, iat: now, exp: now + 3600 };
  const signed = (payload: object) => sign(payload, keys.privateKey, { algorithm: 'RS256', keyid: keys.keyId });
  const [head, body, signature] = valid.split('.');
  const flipped = `${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`;
  const fixed: BadCredential[] = [
    { label: 'no Authorization header' },
    { label: 'empty', header: '' },
    { label: 'scheme only', header: 'Bearer' },
    { label: 'scheme and a space', header: 'Bearer ' },
    { label: 'Basic', header: `Basic ${Buffer.from('user:password').toString('base64')}` },
    { label: 'another scheme', header: `Token ${valid}` },
    { label: 'a garbage token before a valid one', header: `Bearer x${valid} ${valid}` },
    { label: 'tampered signature', header: `Bearer ${head}.${body}.${flipped}` },
    { label: 'no signature', header: `Bearer ${head}.${body}.` },
    { label: 'alg none', header: `Bearer ${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.` },
    {
      label: 'HS256 signed with the public key',
      header: `Bearer ${sign(claims, keys.publicKey.export({ type: 'spki', format: 'pem' }).toString(), { algorithm: 'HS256' })}`,
    },
    { label: 'expired', header: `Bearer ${signed({ ...claims, iat: now - 7200, exp: now - 3600 })}` },
    { label: 'not yet valid', header: `Bearer ${signed({ ...claims, nbf: now + 3600 })}` },
    { label: 'another audience', header: `Bearer ${signed({ ...claims, aud: 'someone-else' })}` },
    { label: 'another issuer', header: `Bearer ${signed({ ...claims, iss: 'https://evil.example' })}` },
    {
      label: 'unknown developer',
      header: `Bearer ${t.app.get(AccessTokens).issue({ sub: randomUUID(), scope: '' }).access_token}`,
    },
    { label: 'subject not a UUID', header: `Bearer ${signed({ ...claims, sub: "' OR 1=1 --" })}` },
    { label: 'subject a number', header: `Bearer ${signed({ ...claims, sub: 42 })}` },
    { label: 'no subject', header: `Bearer ${signed({ ...claims, sub: undefined })}` },
  ];
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...fixed) },
    {
      weight: 1,
      arbitrary: fc.stringMatching(/^[\x21-\x7e]{0,300}$/).map((text): BadCredential => ({
        label: `Bearer ${JSON.stringify(text.slice(0, 40))}`,
        header: `Bearer ${text}`,
      })),
    },
  );
}
