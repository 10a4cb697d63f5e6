import { Client } from 'pg';
import { BillingRater } from '../../src/billing/billing-rater.service';
import { ComputeInstancesRepository } from '../../src/compute/compute-instances.repository';
import { CredentialsRepository } from '../../src/credentials/credentials.repository';
import { Placement } from '../../src/databases/placement.service';
import { createDeveloperWithToken, createIsolatedTestApp, TestApp } from '../support/test-app';

/**
 * Periodic and frequent reads over tables that keep history for ever (tombstones of finalized
 * databases, a storage row per database and month, every compute period): each statement the
 * service sends is planned against years of rows, and must find what it needs through an index
 * rather than read the history. The statements are the ones the service really sends, recorded as
 * it runs them.
 */

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}
const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

const OPERATOR_PASSWORD = 'history-reads-operator';

describe('reads over history kept for ever', () => {
  let t: TestApp & { metadataUrl: string };
  let serverId: string;
  let create: () => Promise<unknown>;
  let auth: { Authorization: string };
  let slug: string;
  let liveId: string;

  /** The statements the service sends to the metadata database while `action` runs. */
  async function statementsOf(action: () => Promise<unknown>): Promise<[string, unknown[]][]> {
    const logQuery = jest.spyOn(t.dataSource.logger, 'logQuery');
    try {
      await action();
      return logQuery.mock.calls.map(([sql, params]) => [sql, (params as unknown[] | undefined) ?? []]);
    } finally {
      logQuery.mockRestore();
    }
  }

  /**
   * The indexes `sql` reads `relation` through (none, for a sequential scan), planned with sequential
   * scans discouraged: what an index can do, not what a small table costs.
   */
  async function indexesOf([sql, params]: [string, unknown[]], relation: string): Promise<(string | undefined)[]> {
    const c = new Client({ connectionString: t.metadataUrl });
    await c.connect();
    try {
      await c.query('SET enable_seqscan = off');
      const { rows } = await c.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
      // A bitmap heap scan names the relation, the bitmap index scans under it their indexes.
      const scans = nodesOf(rows[0]['QUERY PLAN'][0].Plan).filter((n) => n['Relation Name'] === relation);
      const indexes = scans.flatMap((scan) =>
        scan['Node Type'] === 'Bitmap Heap Scan'
          ? nodesOf(scan)
              .filter((n) => n['Node Type'] === 'Bitmap Index Scan')
              .map((n) => n['Index Name'])
          : [scan['Index Name']],
      );
      return [...new Set(indexes)];
    } finally {
      await c.end();
    }
  }

  beforeAll(async () => {
    t = await createIsolatedTestApp({
      WORKERS: 'off',
      DATABASE_POOL_TARGET: '0',
      OPERATOR_PASSWORD,
      PLAN_FREE_MAX_DATABASES: '3',
    });
    auth = (await createDeveloperWithToken(t.app)).auth;
    const ws = (await t.http.post('/workspaces').set(auth).send({ name: 'history' }).expect(201)).body;
    [{ id: serverId }] = await t.dataSource.query<{ id: string }[]>(
      "SELECT id FROM data_plane_servers WHERE region = 'AWS_US_WEST_2' ORDER BY created LIMIT 1",
    );
    // Years of history: finalized databases on the server, three years of monthly storage rows,
    // closed compute periods; and a little live state beside them.
    await t.dataSource.query(
      `INSERT INTO databases (workspace_id, name, region, server_id, status, physical_name, created, deleted,
                              deletion_due_at, finalized)
       SELECT $1, 'gone_' || g, 'AWS_US_WEST_2', $2, 'READY', 'history_gone_' || g,
              timestamptz '2023-01-01' + g * interval '5 minutes', now(), now(), now()
         FROM generate_series(1, 20000) g`,
      [ws.id, serverId],
    );
    await t.dataSource.query(
      `INSERT INTO databases (workspace_id, name, region, server_id, status, physical_name)
       SELECT $1, 'live_' || g, 'AWS_US_WEST_2', $2, 'READY', 'history_live_' || g FROM generate_series(1, 5) g`,
      [ws.id, serverId],
    );
    // Other workspaces' databases queued for deletion, as a busy installation has at any time.
    const other = (await t.http.post('/workspaces').set(auth).send({ name: 'history-other' }).expect(201)).body;
    await t.dataSource.query(
      `INSERT INTO databases (workspace_id, name, region, server_id, status, physical_name, deleted, deletion_due_at)
       SELECT $1, 'queued_' || g, 'AWS_US_WEST_2', $2, 'READY', 'history_queued_' || g, now(), now() + interval '1 day'
         FROM generate_series(1, 5000) g`,
      [other.id, serverId],
    );
    // A workspace with a history of its own (tombstones, a few queued for deletion, one live), one
    // among many as most are.
    const small = (await t.http.post('/workspaces').set(auth).send({ name: 'history-small' }).expect(201)).body;
    await t.dataSource.query(
      `INSERT INTO databases (workspace_id, name, region, server_id, status, physical_name, deleted, deletion_due_at,
                              finalized)
       SELECT $1, 'small_' || g, 'AWS_US_WEST_2', $2, 'READY', 'history_small_' || g,
              CASE WHEN g > 1 THEN now() END, CASE WHEN g > 1 THEN now() + interval '1 day' END,
              CASE WHEN g > 3 THEN now() END
         FROM generate_series(1, 200) g`,
      [small.id, serverId],
    );
    create = () =>
      t.http
        .post(`/workspaces/${small.slug}/databases`)
        .set(auth)
        .send({ databaseName: 'one_more', region: 'AWS_US_WEST_2' });
    await t.dataSource.query(
      `INSERT INTO database_storage_usage (database_id, ym, workspace_id, byte_seconds, observed_seconds)
       SELECT gen_random_uuid(), to_char(date '2023-01-01' + m * interval '1 month', 'YYYY-MM'), gen_random_uuid(), 1, 1
         FROM generate_series(0, 35) m, generate_series(1, 500) d`,
    );
    await t.dataSource.query(
      `INSERT INTO compute_usage_periods (instance_id, database_id, workspace_id, instance_type_id, compute_size, vcpus,
                                         hourly_cost, started_at, ended_at)
       SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'dc-small', 'small', 2, 0.1,
              timestamptz '2023-01-01' + g * interval '10 minutes',
              timestamptz '2023-01-01' + g * interval '10 minutes' + interval '1 hour'
         FROM generate_series(1, 20000) g`,
    );
    // A live database that has had credentials and compute instances made and deleted for years.
    slug = ws.slug;
    [{ id: liveId }] = await t.dataSource.query<{ id: string }[]>(
      "SELECT id FROM databases WHERE workspace_id = $1 AND name = 'live_1'",
      [ws.id],
    );
    await t.dataSource.query(
      `INSERT INTO credentials (id, database_id, password_ciphertext, created, expires_at, dropped)
       SELECT gen_random_uuid(), $1, 'x', timestamptz '2023-01-01' + g * interval '5 minutes', now(), now()
         FROM generate_series(1, 20000) g`,
      [liveId],
    );
    await t.dataSource.query(
      `INSERT INTO compute_instances (database_id, name, instance_type_id, desired_instance_type_id, status, created,
                                      deleted, terminated)
       SELECT $1, 'gone_' || g, 'dc-small', 'dc-small', 'TERMINATED', timestamptz '2023-01-01' + g * interval '5 minutes',
              now(), now()
         FROM generate_series(1, 20000) g`,
      [liveId],
    );
    await t.dataSource.query(
      'ANALYZE databases; ANALYZE database_storage_usage; ANALYZE compute_usage_periods; ANALYZE credentials; ANALYZE compute_instances',
    );
  }, 120000);

  afterAll(() => t?.close());

  it("the billing sweep finds the workspaces of its two months through indexes, reading no other month's rows", async () => {
    const statements = await statementsOf(() => t.app.get(BillingRater).sweep());
    const storage = statements.find(([sql]) => sql.includes('database_storage_usage'));
    const periods = statements.find(([sql]) => sql.includes('compute_usage_periods'));
    expect(storage && periods).toBeTruthy();
    // The month is the storage index's leading column (one range a month); the periods are found as
    // the open ones (the open-period index) or those ended since the first month began.
    expect(await indexesOf(storage!, 'database_storage_usage')).toEqual(['IDX_database_storage_usage_by_month']);
    const periodIndexes = await indexesOf(periods!, 'compute_usage_periods');
    expect(periodIndexes).toContain('IDX_compute_usage_periods_ended_at');
    expect(periodIndexes).not.toContain(undefined);
  });

  it("placement counts a server's databases not finalized without reading its tombstones", async () => {
    const statements = await statementsOf(() => t.app.get(Placement).candidates('AWS_US_WEST_2'));
    const read = statements.find(([s]) => s.includes('data_plane_servers'))!;
    expect(await indexesOf(read, 'databases')).toEqual(['IDX_databases_unfinalized_by_server']);
  });

  it("a create within a limited plan counts the workspace's live and queued databases without reading its tombstones", async () => {
    const statements = await statementsOf(create);
    const count = statements.find(([s]) => s.includes('finalized IS NULL') && s.includes('workspace_id = $1'))!;
    expect(count).toBeTruthy();
    // Neither its own tombstones nor the other workspaces' databases queued for deletion.
    expect((await indexesOf(count, 'databases')).sort()).toEqual([
      'IDX_databases_live_by_created',
      'IDX_databases_queued_by_workspace',
    ]);
  });

  it("a database's credential reads (the plan's count, the list) read none of its dropped credentials", async () => {
    const statements = [
      ...(await statementsOf(() => t.app.get(CredentialsRepository).countLive(liveId))),
      ...(await statementsOf(() =>
        t.http.get(`/workspaces/${slug}/databases/live_1/credentials`).set(auth).expect(200),
      )),
    ].filter(([s]) => /FROM "?credentials"?/.test(s));
    expect(statements).toHaveLength(2);
    for (const statement of statements) {
      expect(await indexesOf(statement, 'credentials')).toEqual(['IDX_credentials_live_by_database']);
    }
  });

  it("a database's compute reads (the cap's count at a create, the list, the sweep's) read none of its terminated instances", async () => {
    const body = { instanceName: 'now', instanceSize: 'small' };
    const statements = [
      ...(await statementsOf(() =>
        t.http.post(`/workspaces/${slug}/databases/live_1/compute`).set(auth).send(body).expect(202),
      )),
      ...(await statementsOf(() => t.http.get(`/workspaces/${slug}/databases/live_1/compute`).set(auth).expect(200))),
      ...(await statementsOf(() => t.app.get(ComputeInstancesRepository).liveOfDatabases([liveId]))),
    ].filter(([s]) => /FROM "?compute_instances"?/.test(s) && !/WHERE "?id"? =/.test(s));
    expect(statements.length).toBeGreaterThanOrEqual(3);
    for (const statement of statements) {
      expect(await indexesOf(statement, 'compute_instances')).toEqual([
        'IDX_compute_instances_unterminated_by_database',
      ]);
    }
  });

  it('the control_plane_databases gauge, read at every scrape, reads no tombstones', async () => {
    const statements = await statementsOf(() => t.http.get('/metrics').auth('operator', OPERATOR_PASSWORD).expect(200));
    const read = statements.find(([s]) => /FROM databases WHERE finalized IS NULL/.test(s))!;
    expect(await indexesOf(read, 'databases')).toEqual(['IDX_databases_unfinalized_by_server']);
  });
});
