import { DatabaseIdsCache, MIN_REMEMBERED_IDS } from '../../src/developers/database-ids-cache';
import { OperationsMetrics } from '../../src/observability/operations-metrics';
import { createDeveloperWithToken, createIsolatedTestApp, TestApp } from '../support/test-app';

/**
 * `/developers/me` for a caller whose workspace holds many databases: the ids are remembered with the
 * workspace's `databases_version` and aggregated again only when that has moved; a trigger moves it
 * with every committed change to the workspace's live databases, whoever makes it.
 */
describe('/developers/me for a workspace with many databases', () => {
  let t: TestApp;
  let me: Awaited<ReturnType<typeof createDeveloperWithToken>>;
  let big: { id: string; slug: string };
  let other: { id: string; slug: string };
  const unique = () => Math.random().toString(36).slice(2, 8);

  beforeAll(async () => {
    // Its own metadata database: the rows seeded here have no physical database behind them.
    t = await createIsolatedTestApp({ WORKERS: 'off', DATABASE_POOL_TARGET: '0' });
    me = await createDeveloperWithToken(t.app);
    const workspace = async () =>
      (
        await t.http
          .post('/workspaces')
          .set(me.auth)
          .send({ name: `Team ${unique()}` })
          .expect(201)
      ).body as { id: string; slug: string };
    big = await workspace();
    other = await workspace();
    await seed(big.id, MIN_REMEMBERED_IDS + 100, 'seeded_');
  }, 60000);
  afterAll(() => t.close());

  /**
   * Database rows as another process (or an operator) would write them, outside the service; on no
   * server, so that they do not fill the region's (DATA_PLANE_MAX_DATABASES).
   */
  async function seed(workspaceId: string, count: number, tag: string): Promise<void> {
    await t.dataSource.query(
      `INSERT INTO databases (workspace_id, name, region, status, physical_name, created)
       SELECT $1, $3::text || n, 'AWS_US_WEST_2', 'READY', 'fake_' || $3::text || n || '_' || $4::text,
              now() - make_interval(secs => $2::int - n)
         FROM generate_series(1, $2::int) AS n`,
      [workspaceId, count, tag, unique()],
    );
  }

  const liveIds = async (workspaceId: string): Promise<string[]> =>
    (
      await t.dataSource.query<{ id: string }[]>(
        'SELECT id FROM databases WHERE workspace_id = $1 AND deleted IS NULL ORDER BY created, id',
        [workspaceId],
      )
    ).map((r) => r.id);
  const versionOf = async (workspaceId: string): Promise<string> =>
    (await t.dataSource.query('SELECT databases_version FROM workspaces WHERE id = $1', [workspaceId]))[0]
      .databases_version;
  const profileIds = async (): Promise<string[]> =>
    (await t.http.get('/developers/me').set(me.auth).expect(200)).body.databases;
  const expected = async () => [...(await liveIds(big.id)), ...(await liveIds(other.id))];
  /** The operations metrics' series of the remembered ids, as a scrape reads them. */
  const metric = async (name: string): Promise<Record<string, number>> => {
    const { values } = await t.app.get(OperationsMetrics).registry.getSingleMetric(name)!.get();
    return Object.fromEntries(values.map((v) => [String(v.labels.source ?? ''), v.value]));
  };
  /** Changes rows the way nothing in the service would: with the triggers off, the version stays. */
  const withoutTriggers = (sql: string, params: unknown[]) =>
    t.dataSource.transaction(async (m) => {
      await m.query('SET LOCAL session_replication_role = replica');
      await m.query(sql, params);
    });

  it('answers with the ids PostgreSQL holds and remembers them at the workspace’s version', async () => {
    expect(await metric('developer_profile_remembered_workspaces')).toEqual({ '': 0 });
    expect(await profileIds()).toEqual(await expected());
    const remembered = t.app.get(DatabaseIdsCache).snapshot().get(big.id);
    expect(remembered?.version).toBe(await versionOf(big.id));
    expect(remembered?.ids.length).toBe((MIN_REMEMBERED_IDS + 100) * 16);
    // A workspace with few databases is read each time, not remembered.
    expect(t.app.get(DatabaseIdsCache).snapshot().has(other.id)).toBe(false);
    expect(await metric('developer_profile_database_ids_total')).toEqual({ aggregated: 1, remembered: 0 });
    expect(await metric('developer_profile_remembered_workspaces')).toEqual({ '': 1 });
    expect(await metric('developer_profile_remembered_bytes')).toEqual({ '': (MIN_REMEMBERED_IDS + 100) * 16 });
  });

  it('serves the remembered ids, without aggregating them again, while the version stays', async () => {
    const before = await profileIds();
    const [victim] = await liveIds(big.id);
    await withoutTriggers('UPDATE databases SET deleted = now() WHERE id = $1', [victim]);
    try {
      // PostgreSQL no longer counts it live, but nothing moved the version: the answer is the
      // remembered one, so the statement did not aggregate the ids.
      expect(await profileIds()).toEqual(before);
      expect(await liveIds(big.id)).not.toContain(victim);
      expect(await metric('developer_profile_database_ids_total')).toEqual({ aggregated: 1, remembered: 2 });
    } finally {
      await withoutTriggers('UPDATE databases SET deleted = NULL WHERE id = $1', [victim]);
    }
  });

  it('shows a database created, deleted or moved through the API or by another process at the next request', async () => {
    let version = await versionOf(big.id);
    const moved = async () => {
      const now = await versionOf(big.id);
      expect(BigInt(now)).toBeGreaterThan(BigInt(version));
      version = now;
    };
    await profileIds();

    const created = (
      await t.http
        .post(`/workspaces/${big.slug}/databases`)
        .set(me.auth)
        .send({ databaseName: `fresh_${unique()}`, region: 'AWS_US_WEST_2' })
        .expect(201)
    ).body as { id: string; name: string };
    await moved();
    let ids = await profileIds();
    expect(ids).toEqual(await expected());
    expect(ids).toContain(created.id);

    await t.http.delete(`/workspaces/${big.slug}/databases/${created.name}`).set(me.auth).expect(200);
    await moved();
    ids = await profileIds();
    expect(ids).toEqual(await expected());
    expect(ids).not.toContain(created.id);

    await seed(big.id, 1, `late_${unique()}_`);
    await moved();
    expect(await profileIds()).toEqual(await expected());

    // Moved into another workspace: both versions move, the id is listed under its new workspace.
    const [first] = await liveIds(big.id);
    const otherVersion = await versionOf(other.id);
    await t.dataSource.query('UPDATE databases SET workspace_id = $2 WHERE id = $1', [first, other.id]);
    await moved();
    expect(BigInt(await versionOf(other.id))).toBeGreaterThan(BigInt(otherVersion));
    ids = await profileIds();
    expect(ids).toEqual(await expected());
    expect(ids[ids.length - 1]).toBe(first);
    await t.dataSource.query('UPDATE databases SET workspace_id = $2 WHERE id = $1', [first, big.id]);
    await moved();
    expect(await profileIds()).toEqual(await expected());

    // A change rolled back moves nothing, and a status change is not a change of the set.
    await t.dataSource
      .transaction(async (m) => {
        await m.query(`UPDATE databases SET deleted = now() WHERE workspace_id = $1`, [big.id]);
        throw new Error('roll back');
      })
      .catch(() => undefined);
    await t.dataSource.query(`UPDATE databases SET status = 'READY' WHERE workspace_id = $1`, [big.id]);
    expect(await versionOf(big.id)).toBe(version);
    expect(await profileIds()).toEqual(await expected());
  });

  it('counts every one of concurrent changes, each committing in turn, and answers what they left', async () => {
    const before = BigInt(await versionOf(big.id));
    const names = Array.from({ length: 8 }, (_, i) => `together_${i}_${unique()}`);
    const created = await Promise.all(
      names.map((databaseName) =>
        t.http
          .post(`/workspaces/${big.slug}/databases`)
          .set(me.auth)
          .send({ databaseName, region: 'AWS_US_WEST_2' })
          .expect(201),
      ),
    );
    // While the profile is read between them, every answer is one PostgreSQL held at some moment:
    // what is left at the end, with some of the four being deleted still in their places.
    const deleted = new Set(created.slice(0, 4).map((r) => r.body.id as string));
    const [answers] = await Promise.all([
      Promise.all([profileIds(), profileIds(), profileIds()]),
      ...names
        .slice(0, 4)
        .map((name) => t.http.delete(`/workspaces/${big.slug}/databases/${name}`).set(me.auth).expect(200)),
    ]);
    const ids = await profileIds();
    expect(ids).toEqual(await expected());
    for (const answer of answers) expect(answer.filter((id) => !deleted.has(id))).toEqual(ids);
    expect(BigInt(await versionOf(big.id))).toBe(before + 12n);
    expect(ids).toEqual(expect.arrayContaining(created.slice(4).map((r) => r.body.id as string)));
    for (const id of deleted) expect(ids).not.toContain(id);
  });
});
