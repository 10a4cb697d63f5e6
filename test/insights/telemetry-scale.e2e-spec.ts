import { Client } from 'pg';
import { metadataPool } from '../../src/database/hot-query';
import { DatabasesService } from '../../src/databases/databases.service';
import { InsightsRepository } from '../../src/insights/insights.repository';
import { sampleServerJobId } from '../../src/insights/telemetry-jobs';
import { SampledDatabase, TelemetrySampler } from '../../src/insights/telemetry-sampler.service';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { Queues } from '../../src/queues/queue-names';
import { createWorkspace, unique } from '../databases/support';
import { createDeveloperWithToken, createIsolatedTestApp, TestApp } from '../support/test-app';

/**
 * The sampler's reads at fleet scale: a pass reads its own server's databases only, the schedule
 * only the servers' ids, and a database's previous sample is one step of the samples' primary key.
 * Rows are written straight into a metadata database of this spec's own, with no workers: nothing
 * ever asks the data plane about them.
 */

const MINUTE = 60_000;
const DAY = 86_400_000;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Scan Direction'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Index Cond'?: string;
  'Recheck Cond'?: string;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

/** An id that sorts where `n` says (uuids order by their bytes). */
const idOf = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

describe('telemetry reads at fleet scale', () => {
  let t: TestApp & { metadataUrl: string };
  let sampler: TelemetrySampler;
  let workspaceId: string;
  /** A: usable databases among tombstones and unbuilt ones; B: one usable database; C: none usable. */
  const servers = { a: '', b: '', c: '' };

  /** The plan of `sql` (flattened), with sequential scans discouraged: what an index can do, not what a tiny table costs. */
  async function plan(sql: string, params: unknown[], analyze = false): Promise<PlanNode[]> {
    const c = new Client({ connectionString: t.metadataUrl });
    await c.connect();
    try {
      await c.query('SET enable_seqscan = off');
      const { rows } = await c.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
        `EXPLAIN (FORMAT JSON${analyze ? ', ANALYZE' : ''}) ${sql}`,
        params,
      );
      return nodesOf(rows[0]['QUERY PLAN'][0].Plan);
    } finally {
      await c.end();
    }
  }

  async function insertServer(created: string): Promise<string> {
    const [row] = await t.dataSource.query<{ id: string }[]>(
      `INSERT INTO data_plane_servers (region, admin_url_ciphertext, public_host, max_databases, created)
       VALUES ('AWS_US_WEST_2', 'never read', 'unused.invalid:5432', 100000, $1) RETURNING id`,
      [created],
    );
    return row.id;
  }

  async function insertDatabase(d: {
    id: string;
    server: string;
    status: string;
    created: string;
    deleted?: boolean;
    finalized?: boolean;
  }): Promise<{ id: string; workspaceId: string; physicalName: string; created: Date }> {
    const physicalName = `tscale_${unique()}_${d.id.slice(-4)}`;
    await t.dataSource.query(
      `INSERT INTO databases (id, workspace_id, name, region, server_id, status, physical_name, created,
                              deleted, deletion_due_at, finalized)
       VALUES ($1, $2, $3, 'AWS_US_WEST_2', $4, $5, $6, $7,
               CASE WHEN $8 THEN now() END, CASE WHEN $8 THEN now() END, CASE WHEN $9 THEN now() END)`,
      [
        d.id,
        workspaceId,
        `db_${d.id.slice(-6)}`,
        d.server,
        d.status,
        physicalName,
        d.created,
        !!(d.deleted || d.finalized),
        !!d.finalized,
      ],
    );
    return { id: d.id, workspaceId, physicalName, created: new Date(d.created) };
  }

  let onA: SampledDatabase[];
  let onB: SampledDatabase[];

  beforeAll(async () => {
    t = await createIsolatedTestApp({ WORKERS: 'off', DATABASE_POOL_TARGET: '0' });
    sampler = t.app.get(TelemetrySampler);
    const auth = (await createDeveloperWithToken(t.app)).auth;
    workspaceId = (await createWorkspace(t, auth)).id;
    servers.a = await insertServer('2001-01-01T00:00:00Z');
    servers.b = await insertServer('2001-01-02T00:00:00Z');
    servers.c = await insertServer('2001-01-03T00:00:00Z');

    // Inserted out of order: the read's order is (created, id), not the table's.
    const a1 = await insertDatabase({ id: idOf(0xa1), server: servers.a, status: 'READY', created: '2020-01-02' });
    const a3 = await insertDatabase({ id: idOf(0xa3), server: servers.a, status: 'READY', created: '2020-01-01' });
    const a2 = await insertDatabase({ id: idOf(0xa2), server: servers.a, status: 'READY', created: '2020-01-01' });
    // Queued for deletion, not finalized yet: it still works, so it is sampled.
    const a4 = await insertDatabase({
      id: idOf(0xa4),
      server: servers.a,
      status: 'READY',
      created: '2020-01-03',
      deleted: true,
    });
    await insertDatabase({
      id: idOf(0xa5),
      server: servers.a,
      status: 'READY',
      created: '2019-01-01',
      finalized: true,
    });
    await insertDatabase({ id: idOf(0xa6), server: servers.a, status: 'REQUESTED', created: '2019-01-01' });
    await insertDatabase({ id: idOf(0xa7), server: servers.a, status: 'BUILT', created: '2019-01-01' });
    const b1 = await insertDatabase({ id: idOf(0xb1), server: servers.b, status: 'READY', created: '2018-01-01' });
    await insertDatabase({
      id: idOf(0xc1),
      server: servers.c,
      status: 'READY',
      created: '2018-01-01',
      finalized: true,
    });
    await insertDatabase({ id: idOf(0xc2), server: servers.c, status: 'REQUESTED', created: '2018-01-01' });
    // Tombstones pile up over the years: the pass must not read them.
    await t.dataSource.query(
      `INSERT INTO databases (workspace_id, name, region, server_id, status, physical_name, created, deleted,
                              deletion_due_at, finalized)
       SELECT $1, 'gone_' || g, 'AWS_US_WEST_2', $2, 'READY', 'tscale_gone_' || g || '_' || $3,
              timestamptz '2015-01-01' + g * interval '1 minute', now(), now(), now()
         FROM generate_series(1, 3000) g`,
      [workspaceId, servers.a, unique()],
    );
    await t.dataSource.query('ANALYZE databases');
    onA = [a2, a3, a1, a4];
    onB = [b1];
  }, 60000);

  afterAll(() => t?.close());

  it("a pass reads its server's READY, not finalized databases only, oldest first", async () => {
    expect(await sampler.serverToSample(servers.a)).toEqual({ key: servers.a, databases: onA });
    expect(await sampler.serverToSample(servers.b)).toEqual({ key: servers.b, databases: onB });
    expect(await sampler.serverToSample(servers.c)).toBeNull();
    expect(await sampler.serverToSample('no-such-server:5432/x')).toBeNull();
    expect(await sampler.runPass(servers.c, new Date())).toBeNull();
  });

  it('the schedule enqueues one pass per server with usable databases, reading none of their databases', async () => {
    const service = t.app.get(DatabasesService);
    const perServer = jest.spyOn(service, 'usableOnServer');
    try {
      const now = new Date();
      expect(await sampler.schedulePasses(now)).toBe(2);
      expect(perServer).not.toHaveBeenCalled();
      const queue = t.app.get(JobDispatcher).queue(Queues.Telemetry);
      const slot = new Date(Math.floor(now.getTime() / MINUTE) * MINUTE);
      for (const key of [servers.a, servers.b]) {
        expect((await queue.getJob(sampleServerJobId(key, slot)))?.data).toEqual({
          serverKey: key,
          at: slot.toISOString(),
        });
      }
      expect(await queue.getJob(sampleServerJobId(servers.c, slot))).toBeNull();
      await queue.empty();
    } finally {
      perServer.mockRestore();
    }
  });

  it("the server's read and the schedule's are answered by the partial index, without a sort", async () => {
    const pool = metadataPool(t.dataSource);
    const query = jest.spyOn(pool, 'query');
    let calls: [string, unknown[]][];
    try {
      await t.app.get(DatabasesService).usableOnServer(servers.a);
      await t.app.get(DatabasesService).serversWithUsable();
      calls = [...query.mock.calls] as unknown as [string, unknown[]][];
    } finally {
      query.mockRestore();
    }
    const [perServerSql, perServerParams] = calls.find(([sql]) => sql.includes('physical_name'))!;
    const [serversSql, serversParams] = calls.find(([sql]) => sql.includes('data_plane_servers'))!;
    const perServer = await plan(perServerSql, perServerParams);
    expect(perServer.filter((n) => n['Relation Name'] === 'databases').map((n) => n['Index Name'])).toEqual([
      'IDX_databases_unfinalized_by_server',
    ]);
    expect(perServer.map((n) => n['Node Type'])).not.toContain('Sort');
    const schedule = await plan(serversSql, serversParams);
    expect(schedule.filter((n) => n['Relation Name'] === 'databases').map((n) => n['Index Name'])).toEqual([
      'IDX_databases_unfinalized_by_server',
    ]);
  });

  describe('previous samples', () => {
    const at = new Date(Math.floor(Date.now() / MINUTE) * MINUTE - 3 * DAY);
    const ids = { busy: idOf(0xd1), stale: idOf(0xd2), edge: idOf(0xd3), none: idOf(0xd4), gap: idOf(0xd5) };

    beforeAll(async () => {
      const sample = (id: string, when: Date, calls: number) =>
        t.dataSource.query(
          `INSERT INTO database_telemetry_samples (database_id, sampled_at, workspace_id, server_key, observed_seconds,
             up_seconds, statements_available, counters, statement_calls, statement_exec_ms)
           VALUES ($1, $2, $3, 'k', 60, 60, true, $4, $5, $6)`,
          [id, when, workspaceId, { xact_rollback: String(calls) }, calls, calls / 2],
        );
      // A day of samples a minute apart before `at`, one at `at` and one after: only the latest before counts.
      await t.dataSource.query(
        `INSERT INTO database_telemetry_samples (database_id, sampled_at, workspace_id, server_key, observed_seconds,
           up_seconds, statements_available, statement_calls)
         SELECT $1, $2::timestamptz - g * interval '1 minute', $3, 'k', 60, 60, true, g
           FROM generate_series(2, 1440) g`,
        [ids.busy, at, workspaceId],
      );
      await sample(ids.busy, new Date(at.getTime() - MINUTE), 42);
      await sample(ids.busy, at, 43);
      await sample(ids.busy, new Date(at.getTime() + MINUTE), 44);
      // More than a day before: no baseline. Exactly a day before: still one.
      await sample(ids.stale, new Date(at.getTime() - DAY - MINUTE), 7);
      await sample(ids.edge, new Date(at.getTime() - DAY), 8);
      // The latest sample's statistics read failed (no counters): the one before is the baseline.
      await sample(ids.gap, new Date(at.getTime() - 3 * MINUTE), 5);
      await t.dataSource.query(
        `INSERT INTO database_telemetry_samples (database_id, sampled_at, workspace_id, server_key, observed_seconds,
           up_seconds, statements_available)
         VALUES ($1, $2, $3, 'k', 60, 60, false)`,
        [ids.gap, new Date(at.getTime() - MINUTE), workspaceId],
      );
      await t.dataSource.query('ANALYZE database_telemetry_samples');
    });

    it('is the latest sample before the moment, within a day', async () => {
      const previous = await t.app.get(InsightsRepository).previousSamples(Object.values(ids), at);
      expect([...previous.keys()].sort()).toEqual([ids.busy, ids.edge, ids.gap]);
      expect(previous.get(ids.busy)).toEqual({
        database_id: ids.busy,
        sampled_at: new Date(at.getTime() - MINUTE),
        counters: { xact_rollback: '42' },
        statement_calls: '42',
        statement_exec_ms: 21,
        statements_sampled_at: new Date(at.getTime() - MINUTE),
      });
      expect(previous.get(ids.edge)).toMatchObject({ sampled_at: new Date(at.getTime() - DAY), statement_calls: '8' });
      // The moment is the latest sample's (the time observed since); the counters are the latest read.
      expect(previous.get(ids.gap)).toEqual({
        database_id: ids.gap,
        sampled_at: new Date(at.getTime() - MINUTE),
        counters: { xact_rollback: '5' },
        statement_calls: '5',
        statement_exec_ms: 2.5,
        statements_sampled_at: new Date(at.getTime() - 3 * MINUTE),
      });
      // A pass that read no counters has no use for older ones.
      const unread = await t.app
        .get(InsightsRepository)
        .previousSamples([ids.gap], at, { counters: false, statements: false });
      expect(unread.get(ids.gap)).toMatchObject({
        counters: null,
        statement_calls: null,
        statement_exec_ms: null,
        statements_sampled_at: null,
      });
      expect((await t.app.get(InsightsRepository).previousSamples([], at)).size).toBe(0);
    });

    it("reads one row of the primary key per database, not the day's samples (two where a read failed)", async () => {
      const query = jest.spyOn(t.dataSource.manager, 'query');
      let sql: string, params: unknown[];
      try {
        await t.app.get(InsightsRepository).previousSamples(Object.values(ids), at);
        [sql, params] = query.mock.calls[0] as [string, unknown[]];
      } finally {
        query.mockRestore();
      }
      const nodes = await plan(sql, params, true);
      const samples = nodes.filter((n) => n['Relation Name'] === 'database_telemetry_samples');
      // The latest sample of each database: one step back along the primary key, at most one row a
      // database (Actual Rows is the average per loop), so no sort.
      const [latest, ...earlier] = samples;
      expect(latest['Index Name']).toMatch(/^PK_/);
      expect(latest['Scan Direction']).toBe('Backward');
      expect(latest['Actual Loops']).toBe(Object.keys(ids).length);
      expect(latest['Actual Rows']).toBeLessThanOrEqual(1);
      // Then, only where that one has none (here: the one database whose read failed), the latest
      // with counters and the latest with statement counters, within that database's day.
      expect(earlier).toHaveLength(2);
      for (const scan of earlier) {
        expect(scan['Actual Loops']).toBe(1);
        expect(scan['Index Cond'] ?? scan['Recheck Cond']).toMatch(/^\(\(database_id = d\.id\) AND \(sampled_at < /);
      }
    });
  });
});
