import { Client } from 'pg';
import { DataPlane } from '../../src/data-plane/data-plane.service';
import { ServerTelemetry } from '../../src/data-plane/telemetry';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { Queues } from '../../src/queues/queue-names';
import { sampleServerJobId } from '../../src/insights/telemetry-jobs';
import { ServerToSample, TelemetrySampler } from '../../src/insights/telemetry-sampler.service';
import { InsightsRepository } from '../../src/insights/insights.repository';
import {
  Auth,
  backdate,
  connectAs,
  createReadyDatabase,
  createWorkspace,
  DatabaseBody,
  databaseRow,
  LONG_AGO,
  serverIdOf,
} from '../databases/support';
import { createDeveloperWithToken, createIsolatedTestApp, createTestApp, TestApp } from '../support/test-app';
import { publishedValidator } from '../support/published-validator';

const MINUTE = 60_000;

describe('database insights (sampled from the real data plane)', () => {
  let t: TestApp;
  let auth: Auth;
  let slug: string;
  let db: DatabaseBody;
  let physical: string;
  let sampler: TelemetrySampler;
  let server: ServerToSample;
  const matches = publishedValidator();
  /** Three passes one minute apart, two hours ago (background passes sample the present). */
  const t0 = new Date(Math.floor((Date.now() - 2 * 3_600_000) / MINUTE) * MINUTE);
  const at = (minutes: number) => new Date(t0.getTime() + minutes * MINUTE);
  const window = (granularity = '1m') =>
    `start=${at(0).toISOString()}&end=${at(3).toISOString()}&granularity=${granularity}`;
  const insights = (kind: string, query: string, database = db.id) =>
    t.http.get(`/workspaces/${slug}/databases/${database}/insights/${kind}?${query}`).set(auth);

  async function admin<T>(work: (c: Client) => Promise<T>): Promise<T> {
    const c = new Client({ connectionString: process.env.DATA_PLANE_URL });
    await c.connect();
    try {
      return await work(c);
    } finally {
      await c.end();
    }
  }

  const sizes: string[] = [];

  beforeAll(async () => {
    // A metadata database of its own: a month is rated at the prices first recorded for it, and
    // on the run's shared one other specs record the default prices.
    t = await createIsolatedTestApp({
      DATABASE_POOL_TARGET: '0',
      // A visible price for databases of a few MB held for minutes, and no allowance to hide it.
      STORAGE_PRICE_PER_GB_MONTH_USD: '100000',
      FREE_STORAGE_INCLUDED_GB: '0',
    });
    // The passes of this spec are driven by hand, at chosen moments.
    await t.app.get(JobDispatcher).queue(Queues.Telemetry).pause(true);
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
    db = await createReadyDatabase(t, auth, slug);
    await backdate(t, [db.id], LONG_AGO);
    physical = (await databaseRow(t, db.id)).physical_name;
    sampler = t.app.get(TelemetrySampler);
    const found = (await sampler.serverToSample((await databaseRow(t, db.id)).server_id!))!;
    server = { ...found, databases: found.databases.filter((d) => d.id === db.id) };

    // Minute 0: up, no baseline yet.
    expect(await sampler.sampleServer(server, at(0))).toEqual({
      sampled: 1,
      up: 1,
      statementsAvailable: true,
      unprobed: 0,
    });

    // Customer work: 50 statements, a failing one, and about 20 MB of rows.
    const cred = (await t.http.post(`/workspaces/${slug}/databases/${db.name}/credentials`).set(auth).expect(200))
      .body as { id: string; password: string };
    const session = await connectAs(db.dbHost!, cred.id, cred.password);
    for (let i = 0; i < 50; i++) await session.query('SELECT $1::int AS n', [i]);
    await expect(session.query('SELECT 1 / 0')).rejects.toThrow(/division by zero/);
    await session.query('CREATE TABLE filler (id int, payload text)');
    await session.query("INSERT INTO filler SELECT g, repeat('x', 1000) FROM generate_series(1, 20000) g");
    await session.end();
    // A session's statistics reach pg_stat_database when it ends.
    const rollbacks = async () =>
      admin(async (c) => {
        const { rows } = await c.query('SELECT xact_rollback::int AS n FROM pg_stat_database WHERE datname = $1', [
          physical,
        ]);
        return rows[0].n as number;
      });
    for (let i = 0; i < 50 && (await rollbacks()) < 1; i++) await new Promise((r) => setTimeout(r, 100));

    // Minute 1: up, with the work above as deltas.
    expect(await sampler.sampleServer(server, at(1))).toMatchObject({ sampled: 1, up: 1 });

    // Minute 2: connections refused, so the probe finds it down.
    await admin((c) => c.query(`ALTER DATABASE "${physical}" ALLOW_CONNECTIONS false`));
    try {
      expect(await sampler.sampleServer(server, at(2))).toMatchObject({ sampled: 1, up: 0 });
    } finally {
      await admin((c) => c.query(`ALTER DATABASE "${physical}" ALLOW_CONNECTIONS true`));
    }
    for (const row of await t.dataSource.query<{ size_bytes: string }[]>(
      'SELECT size_bytes::text FROM database_telemetry_samples WHERE database_id = $1 AND sampled_at <= $2 ORDER BY sampled_at',
      [db.id, at(2)],
    ))
      sizes.push(row.size_bytes);
  }, 120000);
  afterAll(() => t?.close());

  it('uptime drops when connections are refused: time-weighted per bucket and in summary', async () => {
    const res = await insights('uptime', window()).expect(200);
    expect(res.body).toEqual({
      source: 'postgres-ready-probe',
      scope: 'database',
      granularity: '1m',
      calculation: expect.stringContaining('uptimeSeconds / observedSeconds'),
      summary: { uptimePercentage: 66.667, uptimeSeconds: 120, observedSeconds: 180 },
      points: [
        { timestamp: at(0).toISOString(), uptimePercentage: 100, uptimeSeconds: 60, observedSeconds: 60 },
        { timestamp: at(1).toISOString(), uptimePercentage: 100, uptimeSeconds: 60, observedSeconds: 60 },
        { timestamp: at(2).toISOString(), uptimePercentage: 0, uptimeSeconds: 0, observedSeconds: 60 },
      ],
    });
    expect(matches('DatabaseUptimeResponse', res.body)).toBe(true);

    const coarse = await insights('uptime', window('5m')).expect(200);
    expect(coarse.body.points).toEqual([
      { timestamp: at(0).toISOString(), uptimePercentage: 66.667, uptimeSeconds: 120, observedSeconds: 180 },
    ]);
    expect(matches('DatabaseUptimeResponse', coarse.body)).toBe(true);
  });

  it('the path takes the database name as well as its id', async () => {
    const byId = await insights('uptime', window()).expect(200);
    const byName = await insights('uptime', window(), db.name).expect(200);
    expect(byName.body).toEqual(byId.body);
  });

  it('a failing statement raises the rolled-back transactions counter; each point names its source', async () => {
    const res = await insights('errors', window()).expect(200);
    expect(matches('DatabaseErrorsResponse', res.body)).toBe(true);
    expect(res.body.granularity).toBe('1m');
    const minute1 = (res.body.points as { timestamp: string; source: string; errorCount: number }[]).filter(
      (p) => p.timestamp === at(1).toISOString(),
    );
    expect(minute1).toEqual(
      expect.arrayContaining([
        { timestamp: at(1).toISOString(), source: 'pg_stat_database.xact_rollback', errorCount: 1 },
        { timestamp: at(1).toISOString(), source: 'pg_stat_database.deadlocks', errorCount: 0 },
        { timestamp: at(1).toISOString(), source: 'pg_stat_database.conflicts', errorCount: 0 },
      ]),
    );
    // PostgreSQL 14+ also counts sessions ended by fatal errors, abandoned or killed.
    expect(minute1.map((p) => p.source).sort()).toEqual(
      [
        'pg_stat_database.conflicts',
        'pg_stat_database.deadlocks',
        'pg_stat_database.sessions_abandoned',
        'pg_stat_database.sessions_fatal',
        'pg_stat_database.sessions_killed',
        'pg_stat_database.xact_rollback',
      ].sort(),
    );
    // The first sample has no earlier reading: no deltas, no points.
    expect(res.body.points.filter((p: { timestamp: string }) => p.timestamp === at(0).toISOString())).toEqual([]);
  });

  it("queries raise the query rate (customers' statements from pg_stat_statements)", async () => {
    const res = await insights('query-performance', window()).expect(200);
    expect(matches('DatabaseQueryPerformanceResponse', res.body)).toBe(true);
    expect(res.body).toMatchObject({ source: 'pg_stat_statements', granularity: '1m' });
    const [minute1, minute2] = res.body.points as {
      timestamp: string;
      thothQueriesPerSecond: number;
      thothCpuMilliseconds: number;
    }[];
    expect(minute1.timestamp).toBe(at(1).toISOString());
    // 50 SELECTs, the CREATE TABLE and the INSERT (the failed statement is not recorded) over 60 s.
    expect(minute1.thothQueriesPerSecond).toBeGreaterThanOrEqual(52 / 60 - 0.001);
    expect(minute1.thothQueriesPerSecond).toBeLessThan(60 / 60);
    expect(minute1.thothCpuMilliseconds).toBeGreaterThan(0);
    expect(minute2).toEqual({ timestamp: at(2).toISOString(), thothQueriesPerSecond: 0, thothCpuMilliseconds: 0 });
    expect(Object.keys(minute1).sort()).toEqual(['thothCpuMilliseconds', 'thothQueriesPerSecond', 'timestamp']);
  });

  it('storage grows after inserting data, and billing storage reflects it', async () => {
    expect(sizes).toHaveLength(3);
    expect(BigInt(sizes[1]) - BigInt(sizes[0])).toBeGreaterThan(15_000_000n);
    const ym = at(0).toISOString().slice(0, 7);
    const [usage] = await t.dataSource.query<{ byte_seconds: string }[]>(
      'SELECT byte_seconds::text FROM database_storage_usage WHERE database_id = $1 AND ym = $2',
      [db.id, ym],
    );
    expect(BigInt(usage.byte_seconds)).toBeGreaterThanOrEqual(
      sizes.reduce((sum, size) => sum + BigInt(size) * 60n, 0n),
    );
    const res = await t.http.get(`/workspaces/${slug}/billing/${ym}/totals`).set(auth).expect(200);
    expect(matches('WorkspaceMonthlyTotalsDto', res.body)).toBe(true);
    // GB-months = byte-seconds / (10^9 × seconds in the month), × 100,000 USD per GB-month.
    const start = new Date(`${ym}-01T00:00:00Z`);
    const end = new Date(start);
    end.setUTCMonth(end.getUTCMonth() + 1);
    const monthSeconds = (end.getTime() - start.getTime()) / 1000;
    const [line] = await t.dataSource.query<{ quantity: string; unit: string; amount: string; byte_seconds: string }[]>(
      `SELECT l.quantity::text, l.unit, l.amount::text, u.byte_seconds::text
         FROM billing_rated_lines l JOIN database_storage_usage u ON u.database_id::text = l.source_id AND u.ym = l.ym
        WHERE l.component = 'storage' AND l.source_id = $1 AND l.ym = $2`,
      [db.id, ym],
    );
    const expected = (Number(line.byte_seconds) / 1e9 / monthSeconds) * 100_000;
    expect(Number(line.amount)).toBeCloseTo(expected, 5);
    expect(line.unit).toBe('GB-month');
    expect(res.body.totals.storage).toBeGreaterThan(0);
    expect(res.body.totals).toEqual({
      compute: 0,
      subscription: 0,
      storage: Math.round(Number(line.amount) * 100) / 100,
      total: Math.round(Number(line.amount) * 100) / 100,
    });
  });

  it('bad granularity, start or end are 400 naming the parameter', async () => {
    const cases: [string, RegExp][] = [
      [`${window('2m')}`, /granularity must be one of 1m, 5m, 1h, 1d/],
      [
        `start=${new Date(at(0).getTime() + 1000).toISOString()}&end=${at(3).toISOString()}`,
        /start must be minute-aligned/,
      ],
      [
        `start=${at(0).toISOString()}&end=${new Date(at(3).getTime() + 30_000).toISOString()}`,
        /end must be minute-aligned/,
      ],
      ['start=2025-03-01T12:00:00', /start must be an ISO 8601 date-time with a time zone/],
      ['end=yesterday', /end must be an ISO 8601 date-time/],
      [`start=${at(3).toISOString()}&end=${at(0).toISOString()}`, /start must be before end/],
      [`start=2025-01-01T00:00:00Z&end=2025-03-01T00:00:00Z&granularity=1m`, /granularity 1m; at most 10080/],
    ];
    for (const [query, message] of cases) {
      const res = await insights('uptime', query).expect(400);
      expect(res.body).toEqual({ errorCode: 'bad_request', message: expect.stringMatching(message), statusCode: 400 });
    }
  });

  it('a database not in the workspace is 404, by id or by name', async () => {
    for (const kind of ['uptime', 'errors', 'query-performance']) {
      for (const unknown of ['6f1c1c8e-4b0a-4f7e-9a55-0d3c2b1a0f00', 'no_such_db']) {
        const res = await insights(kind, window(), unknown).expect(404);
        expect(res.body).toEqual({
          errorCode: 'entity_not_found',
          message: `No database with id or name ${unknown} in workspace ${slug}`,
          statusCode: 404,
        });
      }
    }
    // Another workspace's database is unknown here too.
    const other = await createWorkspace(t, auth);
    await insights('uptime', window(), db.id).expect(200);
    await t.http.get(`/workspaces/${other.slug}/databases/${db.id}/insights/uptime?${window()}`).set(auth).expect(404);
  });

  it('a window without samples answers empty points and a summary of zeros', async () => {
    const res = await insights('uptime', 'start=2025-01-01T00:00:00Z&end=2025-01-02T00:00:00Z&granularity=1h').expect(
      200,
    );
    expect(res.body.summary).toEqual({ uptimeSeconds: 0, observedSeconds: 0 });
    expect(res.body.points).toEqual([]);
    expect(matches('DatabaseUptimeResponse', res.body)).toBe(true);
  });

  it('is scheduled as one repeatable job that enqueues one pass per server (deterministic id) and prunes old samples', async () => {
    const queue = t.app.get(JobDispatcher).queue(Queues.Telemetry);
    await sampler.ensureSchedule();
    await sampler.ensureSchedule();
    expect((await queue.getRepeatableJobs()).map((j) => [j.name, Number(j.every)])).toEqual([
      ['schedule-passes', 60000],
    ]);

    // A sample older than the retention (31 days) goes; recent ones stay.
    const old = new Date(Date.now() - 32 * 86_400_000);
    await t.dataSource.query(
      `INSERT INTO database_telemetry_samples (database_id, sampled_at, workspace_id, server_key, observed_seconds,
         up_seconds, statements_available) VALUES ($1, $2, $3, 'old', 60, 60, true)`,
      [db.id, old, db.workspace.id],
    );
    const now = new Date();
    expect(await sampler.schedulePasses(now)).toBeGreaterThanOrEqual(1);
    const slot = new Date(Math.floor(now.getTime() / MINUTE) * MINUTE);
    const job = await queue.getJob(sampleServerJobId(server.key, slot));
    expect(job?.name).toBe('sample-server');
    expect(job?.data).toEqual({ serverKey: server.key, at: slot.toISOString() });
    const kept = await t.dataSource.query<{ sampled_at: Date }[]>(
      'SELECT sampled_at FROM database_telemetry_samples WHERE database_id = $1 AND sampled_at <= $2 ORDER BY 1',
      [db.id, at(2)],
    );
    expect(kept.map((r) => r.sampled_at.toISOString())).toEqual([at(0), at(1), at(2)].map((d) => d.toISOString()));

    // The pass job samples the server it names; a second run for the same moment samples only the
    // databases it has no sample of yet (other spec files create databases on this server meanwhile):
    // never one twice.
    const samplesAt = async (when: Date) =>
      Number(
        (
          await t.dataSource.query('SELECT count(*) AS n FROM database_telemetry_samples WHERE sampled_at = $1', [when])
        )[0].n,
      );
    const first = await sampler.runPass(server.key, at(10));
    expect(first?.sampled).toBeGreaterThanOrEqual(1);
    const before = await samplesAt(at(10));
    const second = await sampler.runPass(server.key, at(10));
    expect(second?.sampled).toBe((await samplesAt(at(10))) - before);
    expect(
      await t.dataSource.query(
        'SELECT database_id FROM database_telemetry_samples WHERE sampled_at = $1 GROUP BY database_id HAVING count(*) > 1',
        [at(10)],
      ),
    ).toEqual([]);
    expect(await sampler.runPass('no-such-server:5432/x', at(10))).toBeNull();
  });

  it('query performance is 502 when pg_stat_statements is not loaded on the server', async () => {
    // The metadata cluster (no shared_preload_libraries) serves as a data-plane server without it.
    // Its own metadata database: the EU server it registers must not become other specs' fleet.
    const bare = await createIsolatedTestApp({
      DATABASE_POOL_TARGET: '0',
      DATA_PLANE_URL_AWS_EU_CENTRAL_1: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
      DATA_PLANE_LOCK_SHARED_DATABASES: 'false',
    });
    let euPhysical: string | undefined;
    try {
      await bare.app.get(JobDispatcher).queue(Queues.Telemetry).pause(true);
      const owner = (await createDeveloperWithToken(bare.app)).auth;
      const ws = await createWorkspace(bare, owner);
      const eu = await createReadyDatabase(bare, owner, ws.slug, undefined, 'AWS_EU_CENTRAL_1');
      euPhysical = (await databaseRow(bare, eu.id)).physical_name;
      await backdate(bare, [eu.id], LONG_AGO);
      const s = bare.app.get(TelemetrySampler);
      const found = (await s.serverToSample((await databaseRow(bare, eu.id)).server_id!))!;
      const pass = await s.sampleServer({ ...found, databases: found.databases.filter((d) => d.id === eu.id) }, at(0));
      expect(pass).toEqual({ sampled: 1, up: 1, statementsAvailable: false, unprobed: 0 });
      const res = await bare.http
        .get(`/workspaces/${ws.slug}/databases/${eu.id}/insights/query-performance?${window()}`)
        .set(owner)
        .expect(502);
      expect(res.body).toEqual({
        errorCode: 'server_error',
        message: expect.stringContaining('pg_stat_statements is not loaded'),
        statusCode: 502,
      });
      // Uptime and errors do not need it.
      const uptime = await bare.http
        .get(`/workspaces/${ws.slug}/databases/${eu.id}/insights/uptime?${window()}`)
        .set(owner)
        .expect(200);
      expect(uptime.body.summary).toEqual({ uptimePercentage: 100, uptimeSeconds: 60, observedSeconds: 60 });
    } finally {
      if (euPhysical)
        await bare.app.get(DataPlane).dropDatabase(await serverIdOf(bare, 'AWS_EU_CENTRAL_1'), euPhysical);
      await bare.close();
    }
  }, 60000);
});

describe('storage of a claimed instant database', () => {
  let t: TestApp;
  beforeAll(async () => {
    // A metadata database of its own, for its prices (see above).
    t = await createIsolatedTestApp({
      DATABASE_POOL_TARGET: '0',
      // A visible price for a database of a few MB held for a minute, and no allowance to hide it.
      STORAGE_PRICE_PER_GB_MONTH_USD: '100000',
      FREE_STORAGE_INCLUDED_GB: '0',
      INSTANT_DATABASES_PER_ADDRESS_PER_HOUR: '100',
      INSTANT_DATABASES_PER_HOUR: '1000',
    });
    await t.app.get(JobDispatcher).queue(Queues.Telemetry).pause(true);
  });
  afterAll(() => t?.close());

  it('bills the storage sampled after the claim to the claiming workspace; the time before stays with the holding workspace', async () => {
    const auth = (await createDeveloperWithToken(t.app)).auth;
    const ws = await createWorkspace(t, auth);
    const provisioned = await t.http.post('/databases/provision').send({}).expect(201);
    const { database, claimCode } = provisioned.body as { database: { id: string }; claimCode: string };
    const [holding] = await t.dataSource.query<{ id: string }[]>("SELECT id FROM workspaces WHERE slug = '~unclaimed'");
    await backdate(t, [database.id], LONG_AGO);
    const sampler = t.app.get(TelemetrySampler);
    const pass = async (at: Date) => {
      // What the pass job does: the servers and the databases' workspaces as they are now.
      const found = (await sampler.serverToSample((await databaseRow(t, database.id)).server_id!))!;
      const only = { ...found, databases: found.databases.filter((d) => d.id === database.id) };
      expect(await sampler.sampleServer(only, at)).toMatchObject({ sampled: 1 });
    };
    // The passes are placed in the previous month, where no background pass (of other apps on this
    // data plane, which sample the present) can add to them.
    const now = new Date();
    const monthStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1);
    const ym = new Date(monthStart).toISOString().slice(0, 7);
    const beforeClaim = new Date(monthStart + MINUTE);
    const afterClaim = new Date(monthStart + 2 * MINUTE);

    await pass(beforeClaim);
    await t.http.post(`/workspaces/${ws.slug}/databases/claim`).set(auth).send({ claimCode }).expect(200);
    await pass(afterClaim);

    const samples = await t.dataSource.query<
      { sampled_at: Date; workspace_id: string; size_bytes: string; observed_seconds: number }[]
    >(
      `SELECT sampled_at, workspace_id, size_bytes::text, observed_seconds FROM database_telemetry_samples
        WHERE database_id = $1 AND sampled_at <= $2 ORDER BY sampled_at`,
      [database.id, afterClaim],
    );
    expect(samples).toEqual([
      { sampled_at: beforeClaim, workspace_id: holding.id, size_bytes: expect.any(String), observed_seconds: 60 },
      { sampled_at: afterClaim, workspace_id: ws.id, size_bytes: expect.any(String), observed_seconds: 60 },
    ]);
    const byteSeconds = samples.map((s) => (BigInt(s.size_bytes) * BigInt(s.observed_seconds)).toString());
    expect(
      await t.dataSource.query(
        `SELECT workspace_id, byte_seconds::text, observed_seconds::text FROM database_storage_usage
          WHERE database_id = $1 AND ym = $2 ORDER BY workspace_id = $3`,
        [database.id, ym, holding.id],
      ),
    ).toEqual([
      { workspace_id: ws.id, byte_seconds: byteSeconds[1], observed_seconds: '60' },
      { workspace_id: holding.id, byte_seconds: byteSeconds[0], observed_seconds: '60' },
    ]);

    const res = await t.http.get(`/workspaces/${ws.slug}/billing/${ym}/totals`).set(auth).expect(200);
    const monthEnd = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
    const expected = (Number(byteSeconds[1]) / 1e9 / ((monthEnd - monthStart) / 1000)) * 100_000;
    const lines = await t.dataSource.query<{ source_id: string; amount: string }[]>(
      `SELECT source_id, amount::text FROM billing_rated_lines WHERE workspace_id = $1 AND ym = $2`,
      [ws.id, ym],
    );
    expect(lines).toEqual([{ source_id: database.id, amount: expect.any(String) }]);
    expect(Number(lines[0].amount)).toBeCloseTo(expected, 5);
    const storage = Math.round(Number(lines[0].amount) * 100) / 100;
    expect(res.body).toEqual({ ym, totals: { compute: 0, subscription: 0, storage, total: storage } });
  }, 60000);
});

describe('telemetry passes driven by hand over a database of their own', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ DATABASE_POOL_TARGET: '0' });
    await t.app.get(JobDispatcher).queue(Queues.Telemetry).pause(true);
  });
  afterAll(() => t?.close());

  /**
   * A READY database in a new workspace, and what a pass over it alone samples. Backdated (unless
   * told not to) to before the moments these passes sample, hours or weeks ago.
   */
  async function ownDatabase({ backdated = true } = {}) {
    const auth = (await createDeveloperWithToken(t.app)).auth;
    const { slug } = await createWorkspace(t, auth);
    const db = await createReadyDatabase(t, auth, slug);
    if (backdated) await backdate(t, [db.id], LONG_AGO);
    const sampler = t.app.get(TelemetrySampler);
    const found = (await sampler.serverToSample((await databaseRow(t, db.id)).server_id!))!;
    const server = { ...found, databases: found.databases.filter((d) => d.id === db.id) };
    return { auth, slug, db, sampler, server };
  }

  /**
   * Holds the first call of the repository's `method` until `release` (it goes on as usual then);
   * `reached` resolves when that call has come.
   */
  function holdFirstCall(repo: InsightsRepository, method: 'previousSamples' | 'lockServerSamples') {
    let reach!: () => void;
    const reached = new Promise<void>((resolve) => (reach = resolve));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const original = (repo[method] as (...args: unknown[]) => Promise<unknown>).bind(repo);
    const spy = jest.spyOn(repo, method).mockImplementationOnce((async (...args: unknown[]) => {
      reach();
      await held;
      return original(...args);
    }) as never);
    return { reached, release, restore: () => spy.mockRestore() };
  }

  /** Customer work: a failing statement and 30 queries, seen by pg_stat_database once the session ends. */
  async function customerWork(auth: Auth, slug: string, db: DatabaseBody): Promise<void> {
    const cred = (await t.http.post(`/workspaces/${slug}/databases/${db.name}/credentials`).set(auth).expect(200))
      .body as { id: string; password: string };
    const session = await connectAs(db.dbHost!, cred.id, cred.password);
    for (let i = 0; i < 30; i++) await session.query('SELECT $1::int AS n', [i]);
    await expect(session.query('SELECT 1 / 0')).rejects.toThrow(/division by zero/);
    await session.end();
    const physical = (await databaseRow(t, db.id)).physical_name;
    const rollbacks = async () => {
      const c = new Client({ connectionString: process.env.DATA_PLANE_URL });
      await c.connect();
      try {
        const { rows } = await c.query<{ n: number }>(
          'SELECT xact_rollback::int AS n FROM pg_stat_database WHERE datname = $1',
          [physical],
        );
        return rows[0].n;
      } finally {
        await c.end();
      }
    };
    for (let i = 0; i < 50 && (await rollbacks()) < 1; i++) await new Promise((r) => setTimeout(r, 100));
  }

  /** The database's samples from `from` to `to`: counters as read, and the deltas recorded. */
  const samplesOf = (databaseId: string, from: Date, to: Date) =>
    t.dataSource.query<
      {
        sampled_at: Date;
        counters: Record<string, string> | null;
        statement_calls: string | null;
        error_deltas: Record<string, number> | null;
        statement_calls_delta: string | null;
      }[]
    >(
      `SELECT sampled_at, counters, statement_calls::text, error_deltas, statement_calls_delta::text
         FROM database_telemetry_samples WHERE database_id = $1 AND sampled_at BETWEEN $2 AND $3 ORDER BY sampled_at`,
      [databaseId, from, to],
    );

  /** Every later sample's deltas add up to the increase of the counters since the first: nothing counted twice. */
  function expectCountedOnce(rows: Awaited<ReturnType<typeof samplesOf>>): void {
    const [first, ...later] = rows;
    const last = later[later.length - 1];
    const sum = (of: (r: (typeof rows)[number]) => number) => later.reduce((total, r) => total + of(r), 0);
    expect({
      rollbacks: sum((r) => r.error_deltas?.xact_rollback ?? 0),
      calls: sum((r) => Number(r.statement_calls_delta ?? 0)),
    }).toEqual({
      rollbacks: Number(last.counters!.xact_rollback) - Number(first.counters!.xact_rollback),
      calls: Number(last.statement_calls) - Number(first.statement_calls),
    });
    expect(sum((r) => r.error_deltas?.xact_rollback ?? 0)).toBeGreaterThanOrEqual(1);
    expect(sum((r) => Number(r.statement_calls_delta ?? 0))).toBeGreaterThanOrEqual(30);
  }

  it('two passes over one server at once (a late one and the next slot’s) count each error and query once: their writes take turns', async () => {
    const { auth, slug, db, sampler, server } = await ownDatabase();
    const t0 = new Date(Math.floor((Date.now() - 4 * 3_600_000) / MINUTE) * MINUTE);
    const at = (minutes: number) => new Date(t0.getTime() + minutes * MINUTE);
    expect(await sampler.sampleServer(server, at(0))).toMatchObject({ sampled: 1 });
    await customerWork(auth, slug, db);
    // The minute-1 pass has read the server and is about to read its baselines when the minute-2
    // pass comes, reads the server too and goes as far as it can.
    const baselines = holdFirstCall(t.app.get(InsightsRepository), 'previousSamples');
    try {
      const late = sampler.sampleServer(server, at(1));
      await baselines.reached;
      const next = sampler.sampleServer(server, at(2));
      await new Promise((resolve) => setTimeout(resolve, 500));
      baselines.release();
      await Promise.all([late, next]);
    } finally {
      baselines.restore();
    }
    const rows = await samplesOf(db.id, at(0), at(2));
    expect(rows.map((r) => r.sampled_at)).toEqual([at(0), at(1), at(2)]);
    expectCountedOnce(rows);
  }, 60000);

  it('a late pass that writes after the next slot’s pass records what it observed but no deltas: the later sample already counts them', async () => {
    const { auth, slug, db, sampler, server } = await ownDatabase();
    const t0 = new Date(Math.floor((Date.now() - 5 * 3_600_000) / MINUTE) * MINUTE);
    const at = (minutes: number) => new Date(t0.getTime() + minutes * MINUTE);
    expect(await sampler.sampleServer(server, at(0))).toMatchObject({ sampled: 1 });
    await customerWork(auth, slug, db);
    // The minute-1 pass has read the server; the minute-2 pass is written before it takes its turn.
    const turn = holdFirstCall(t.app.get(InsightsRepository), 'lockServerSamples');
    let late: Promise<unknown> | undefined;
    try {
      late = sampler.sampleServer(server, at(1));
      await turn.reached;
      expect(await sampler.sampleServer(server, at(2))).toMatchObject({ sampled: 1 });
      turn.release();
      expect(await late).toMatchObject({ sampled: 1, up: 1 });
    } finally {
      turn.release();
      await late?.catch(() => undefined);
      turn.restore();
    }
    const rows = await samplesOf(db.id, at(0), at(2));
    expect(rows.map((r) => r.sampled_at)).toEqual([at(0), at(1), at(2)]);
    expect(rows[1]).toMatchObject({ error_deltas: null, statement_calls_delta: null });
    expect(rows[1].counters).not.toBeNull();
    expectCountedOnce(rows);
  }, 60000);

  it('after one whose statistics read failed count the errors and queries since the last sample that read them', async () => {
    const { auth, slug, db, sampler, server } = await ownDatabase();
    const t0 = new Date(Math.floor((Date.now() - 3 * 3_600_000) / MINUTE) * MINUTE);
    const at = (minutes: number) => new Date(t0.getTime() + minutes * MINUTE);

    expect(await sampler.sampleServer(server, at(0))).toMatchObject({ sampled: 1, statementsAvailable: true });
    await customerWork(auth, slug, db);

    // Minute 1: the statistics read fails; the probe still finds the database up.
    const failed = jest
      .spyOn(ServerTelemetry.prototype, 'databaseCounters')
      .mockRejectedValueOnce(new Error('simulated failure of the statistics read'));
    try {
      expect(await sampler.sampleServer(server, at(1))).toMatchObject({
        sampled: 1,
        up: 1,
        statementsAvailable: false,
      });
    } finally {
      failed.mockRestore();
    }
    // Minute 2: read again; its deltas reach back to minute 0.
    expect(await sampler.sampleServer(server, at(2))).toMatchObject({ sampled: 1, statementsAvailable: true });

    const rows = await t.dataSource.query<
      {
        counters: unknown;
        error_deltas: Record<string, number>;
        statement_calls_delta: string | null;
        delta_seconds: number | null;
      }[]
    >(
      `SELECT counters, error_deltas, statement_calls_delta::text, delta_seconds FROM database_telemetry_samples
        WHERE database_id = $1 AND sampled_at BETWEEN $2 AND $3 ORDER BY sampled_at`,
      [db.id, at(0), at(2)],
    );
    expect(rows.map((r) => r.counters === null)).toEqual([false, true, false]);
    expect(rows[1]).toMatchObject({ error_deltas: {}, statement_calls_delta: null });
    expect(rows[2].error_deltas.xact_rollback).toBeGreaterThanOrEqual(1);
    expect(Number(rows[2].statement_calls_delta)).toBeGreaterThanOrEqual(30);
    // Those calls were made over the two minutes since minute 0: the rate's span, not one minute.
    expect(rows[2].delta_seconds).toBe(120);

    const errors = await t.http
      .get(
        `/workspaces/${slug}/databases/${db.id}/insights/errors?start=${at(0).toISOString()}&end=${at(3).toISOString()}&granularity=1m`,
      )
      .set(auth)
      .expect(200);
    expect(errors.body.points).toContainEqual({
      timestamp: at(2).toISOString(),
      source: 'pg_stat_database.xact_rollback',
      errorCount: rows[2].error_deltas.xact_rollback,
    });
  }, 60000);

  /** The database's storage rows: month → [byte-seconds, observed seconds]. */
  async function storageOf(databaseId: string): Promise<Record<string, [string, string]>> {
    const rows = await t.dataSource.query<{ ym: string; byte_seconds: string; observed_seconds: string }[]>(
      'SELECT ym, byte_seconds::text, observed_seconds::text FROM database_storage_usage WHERE database_id = $1',
      [databaseId],
    );
    return Object.fromEntries(rows.map((r) => [r.ym, [r.byte_seconds, r.observed_seconds]]));
  }

  async function sizeAt(databaseId: string, at: Date): Promise<bigint> {
    const [row] = await t.dataSource.query<{ size_bytes: string }[]>(
      'SELECT size_bytes::text FROM database_telemetry_samples WHERE database_id = $1 AND sampled_at = $2',
      [databaseId, at],
    );
    return BigInt(row.size_bytes);
  }

  it('never observe nor meter a database before it was created: a late pass skips it, its first sample spans only its life', async () => {
    const { db, sampler, server } = await ownDatabase({ backdated: false });
    const [{ created }] = await t.dataSource.query<{ created: Date }[]>('SELECT created FROM databases WHERE id = $1', [
      db.id,
    ]);
    // The pass of a slot that began before the create, run late (after it): not this database's.
    const slot = new Date(created.getTime() - 30_000);
    expect(await sampler.sampleServer(server, slot)).toMatchObject({ sampled: 0 });
    // The next pass, 20 s into its life: 20 s observed, up and metered, not a whole interval.
    const next = new Date(created.getTime() + 20_000);
    expect(await sampler.sampleServer(server, next)).toMatchObject({ sampled: 1, up: 1 });
    expect(
      await t.dataSource.query(
        'SELECT sampled_at, observed_seconds, up_seconds FROM database_telemetry_samples WHERE database_id = $1',
        [db.id],
      ),
    ).toEqual([{ sampled_at: next, observed_seconds: 20, up_seconds: 20 }]);
    const size = await sizeAt(db.id, next);
    expect(await storageOf(db.id)).toEqual({ [next.toISOString().slice(0, 7)]: [(size * 20n).toString(), '20'] });
  }, 60000);

  it("meter a deleted database's storage up to when its deletion was due, however late its finalization", async () => {
    const { auth, slug, db, sampler, server } = await ownDatabase();
    const t0 = new Date(Math.floor((Date.now() - 2 * 3_600_000) / MINUTE) * MINUTE);
    const at = (minutes: number) => new Date(t0.getTime() + minutes * MINUTE);
    await t.http.delete(`/workspaces/${slug}/databases/${db.name}`).set(auth).expect(200);
    // Due 20 s into the second minute; its finalization has not come (a job lost, a server slow).
    await t.dataSource.query('UPDATE databases SET deleted = $2, deletion_due_at = $3 WHERE id = $1', [
      db.id,
      at(-60),
      new Date(at(1).getTime() + 20_000),
    ]);
    for (const minute of [0, 1, 2, 3]) {
      expect(await sampler.sampleServer(server, at(minute))).toMatchObject({ sampled: 1 });
    }
    // The minutes up to minutes 0 and 1 in full (a first sample spans one interval), 20 s of the
    // one up to minute 2, nothing of the one up to minute 3.
    const bytes = async (minute: number, seconds: bigint) => (await sizeAt(db.id, at(minute))) * seconds;
    expect(await storageOf(db.id)).toEqual({
      [t0.toISOString().slice(0, 7)]: [
        ((await bytes(0, 60n)) + (await bytes(1, 60n)) + (await bytes(2, 20n))).toString(),
        String(60 + 60 + 20),
      ],
    });
  }, 60000);

  it('split the storage of a span across the start of a month between the two months', async () => {
    const { db, sampler, server } = await ownDatabase();
    const now = new Date();
    const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    const previousYm = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString().slice(0, 7);
    const ym = monthStart.toISOString().slice(0, 7);
    // Passes 40 s before and 20 s after midnight (an interval that does not divide the day).
    const before = new Date(monthStart.getTime() - 40_000);
    const after = new Date(monthStart.getTime() + 20_000);
    expect(await sampler.sampleServer(server, before)).toMatchObject({ sampled: 1 });
    expect(await sampler.sampleServer(server, after)).toMatchObject({ sampled: 1 });
    // The first sample spans one interval (60 s), all before midnight; the second 40 s before it, 20 after.
    const [sizeBefore, sizeAfter] = [await sizeAt(db.id, before), await sizeAt(db.id, after)];
    expect(await storageOf(db.id)).toEqual({
      [previousYm]: [(sizeBefore * 60n + sizeAfter * 40n).toString(), '100'],
      [ym]: [(sizeAfter * 20n).toString(), '20'],
    });
  }, 60000);

  it('meter the storage of the sample taken at 00:00Z on the 1st to the month its interval belongs to: the one that just ended', async () => {
    const { db, sampler, server } = await ownDatabase();
    const now = new Date();
    const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    const previousYm = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString().slice(0, 7);

    // The minute before midnight, then the minute after it.
    expect(await sampler.sampleServer(server, monthStart)).toMatchObject({ sampled: 1 });
    expect(await sampler.sampleServer(server, new Date(monthStart.getTime() + MINUTE))).toMatchObject({ sampled: 1 });

    const samples = await t.dataSource.query<{ size_bytes: string; observed_seconds: number }[]>(
      `SELECT size_bytes::text, observed_seconds FROM database_telemetry_samples
        WHERE database_id = $1 AND sampled_at = ANY($2::timestamptz[]) ORDER BY sampled_at`,
      [db.id, [monthStart, new Date(monthStart.getTime() + MINUTE)]],
    );
    expect(samples).toHaveLength(2);
    const [atMidnight] = samples;
    expect(
      await t.dataSource.query(
        'SELECT byte_seconds::text, observed_seconds::text FROM database_storage_usage WHERE database_id = $1 AND ym = $2',
        [db.id, previousYm],
      ),
    ).toEqual([
      {
        byte_seconds: (BigInt(atMidnight.size_bytes) * BigInt(atMidnight.observed_seconds)).toString(),
        observed_seconds: String(atMidnight.observed_seconds),
      },
    ]);
  }, 60000);
});
