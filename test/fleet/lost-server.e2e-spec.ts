import { Client } from 'pg';
import { Auth, createReadyDatabase, createWorkspace, serverIdOf, unique, waitForStatus } from '../databases/support';
import { runCli } from '../identity/identity-support';
import { secondDataPlaneUrl } from '../support/second-data-plane';
import { TcpRelay } from '../support/tcp-relay';
import { createDeveloperWithToken, createIsolatedTestApp, eventually, TestApp } from '../support/test-app';
import { waitForInstance } from '../compute/support';
import { SecretBox } from '../../src/common/crypto/secret-box';
import { DataPlane } from '../../src/data-plane/data-plane.service';
import { DatabaseLifecycle } from '../../src/databases/database-lifecycle.service';
import { WarmPool } from '../../src/databases/warm-pool.service';

const REGION = 'AWS_US_WEST_2';
const SECOND_URL = secondDataPlaneUrl;

/** Drops what the spec built on the second cluster: a lost server's databases outlive its removal. */
async function dropFromSecondCluster(physicalNames: string[]): Promise<void> {
  const db = new Client({ connectionString: SECOND_URL() });
  await db.connect();
  try {
    for (const physical of physicalNames) {
      await db.query(`DROP DATABASE IF EXISTS "${physical}" WITH (FORCE)`);
      const { rows } = await db.query<{ rolname: string }>(
        `SELECT r.rolname FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member
           JOIN pg_roles o ON o.oid = m.roleid WHERE o.rolname = $1`,
        [`${physical}_owner`],
      );
      for (const { rolname } of rows) await db.query(`DROP ROLE IF EXISTS "${rolname}"`);
      await db.query(`DROP ROLE IF EXISTS "${physical}_owner"`);
    }
  } finally {
    await db.end();
  }
}

describe('a server lost for good (server:remove --lost)', () => {
  let t: TestApp & { metadataUrl: string };
  let link: TcpRelay;
  let auth: Auth;
  let slug: string;
  let first: string;
  let lost: string;
  const cli = (args: string[]) => runCli(args, { DATABASE_URL: t.metadataUrl });
  const path = (name = '') => `/workspaces/${slug}/databases${name ? `/${name}` : ''}`;
  const built: string[] = [];

  beforeAll(async () => {
    link = await TcpRelay.inFrontOf(SECOND_URL());
    t = await createIsolatedTestApp({
      DATABASE_POOL_TARGET: '1',
      DATABASE_DELETION_GRACE_SECONDS: '3600',
      DATA_PLANE_CONNECT_TIMEOUT_MS: '1000',
    });
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
    first = await serverIdOf(t, REGION);
    const added = await cli(['server:add', '--region', REGION, '--url', link.through(SECOND_URL())]);
    lost = (added.json as { id: string }).id;
    // Only the second server takes new databases until it is disabled.
    expect((await cli(['server:drain', '--id', first])).code).toBe(0);
  }, 120000);
  afterAll(async () => {
    await t?.close();
    await link?.down();
    await dropFromSecondCluster(built);
  });

  it('forgets a DISABLED server that does not answer: its databases are gone for their customers (finalized, their credentials dropped, their compute ended), its warm pool and its row removed; nothing else changes', async () => {
    // On the server to be lost: a READY database with a credential and a compute instance, one
    // queued for deletion (its grace period running), and a warm-pool entry.
    const kept = await createReadyDatabase(t, auth, slug, `kept_${unique()}`);
    const credential = (
      await t.http
        .post(`${path(kept.name)}/credentials`)
        .set(auth)
        .expect(200)
    ).body as {
      id: string;
    };
    const instance = (
      await t.http
        .post(`${path(kept.name)}/compute`)
        .set(auth)
        .send({ instanceSize: 'small', instanceName: 'lost_ci' })
    ).body as { instanceId: string };
    await waitForInstance(t, auth, slug, kept.name, instance.instanceId, 'READY');
    const queued = await createReadyDatabase(t, auth, slug, `queued_${unique()}`);
    await t.http.delete(path(queued.name)).set(auth).expect(200);
    const rowsOn = (server: string) =>
      t.dataSource.query<{ id: string; name: string; physical_name: string; deleted: Date | null }[]>(
        'SELECT id, name, physical_name, deleted FROM databases WHERE server_id = $1 ORDER BY name',
        [server],
      );
    const onLost = await rowsOn(lost);
    expect(onLost.map((r) => r.id).sort()).toEqual([kept.id, queued.id].sort());
    // A refill that finds another run holding the server's refill lock (the app's own refill job,
    // queued by the creates above) returns at once and leaves the pool to that run: so refill until
    // the entry is there and built.
    const pooled = await eventually(async () => {
      await t.app.get(WarmPool).refill(lost);
      const rows = await t.dataSource.query<{ physical_name: string; ready: boolean }[]>(
        'SELECT physical_name, ready FROM pooled_databases WHERE server_id = $1',
        [lost],
      );
      return rows.every((r) => r.ready) && rows.length > 0 && rows;
    });
    expect(pooled).toHaveLength(1);
    built.push(...onLost.map((r) => r.physical_name), ...pooled.map((p) => p.physical_name));
    // And one on the server that stays: untouched throughout.
    expect((await cli(['server:activate', '--id', first])).code).toBe(0);
    expect((await cli(['server:drain', '--id', lost])).code).toBe(0);
    const elsewhere = await createReadyDatabase(t, auth, slug, `elsewhere_${unique()}`);
    const elsewhereBefore = await t.dataSource.query('SELECT * FROM databases WHERE id = $1', [elsewhere.id]);

    // Only a DISABLED server can be written off…
    const notDisabled = await cli(['server:remove', '--id', lost, '--lost']);
    expect(notDisabled.code).toBe(1);
    expect(notDisabled.stderr).toMatch(/is DRAINING; only a DISABLED server can be removed as lost \(server:disable/);
    expect((await cli(['server:disable', '--id', lost])).code).toBe(0);
    // …and one that answers is not lost: its databases can be deleted and finalized the usual way.
    const answers = await cli(['server:remove', '--id', lost, '--lost']);
    expect(answers.code).toBe(1);
    expect(answers.stderr).toMatch(/answers; it is not lost/);
    // Without --lost, a dead server’s databases (two, and its warm-pool entry) hold it for good.
    await link.down();
    const refused = await cli(['server:remove', '--id', lost]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/still holds 3 database\(s\)/);
    expect(await t.dataSource.query('SELECT id FROM data_plane_servers WHERE id = $1', [lost])).toHaveLength(1);

    const before = Date.now();
    const removed = await cli(['server:remove', '--id', lost, '--lost']);
    expect({ code: removed.code, stderr: removed.stderr }).toEqual({ code: 0, stderr: '' });
    // What the operator needs to tell the customers: which databases were lost, in which workspace.
    expect(removed.json).toMatchObject({
      id: lost,
      region: REGION,
      state: 'DISABLED',
      lost: {
        databases: expect.arrayContaining([
          { id: kept.id, name: kept.name, workspaceId: expect.any(String) },
          { id: queued.id, name: queued.name, workspaceId: expect.any(String) },
        ]),
        pooled: 1,
      },
    });
    expect((removed.json as { lost: { databases: unknown[] } }).lost.databases).toHaveLength(2);

    expect(await t.dataSource.query('SELECT id FROM data_plane_servers WHERE id = $1', [lost])).toEqual([]);
    expect(await t.dataSource.query('SELECT id FROM pooled_databases WHERE server_id = $1', [lost])).toEqual([]);
    const tombstones = await t.dataSource.query<
      { id: string; server_id: string | null; deleted: Date; deletion_due_at: Date; finalized: Date }[]
    >('SELECT id, server_id, deleted, deletion_due_at, finalized FROM databases WHERE id = ANY($1) ORDER BY id', [
      [kept.id, queued.id],
    ]);
    for (const row of tombstones) {
      expect(row.server_id).toBeNull();
      expect(row.finalized.getTime()).toBeGreaterThanOrEqual(before - 1000);
      // Billed until the removal at the latest.
      expect(row.deletion_due_at.getTime()).toBeLessThanOrEqual(row.finalized.getTime());
    }
    // The queued one keeps the moment its customer deleted it.
    const queuedDeleted = onLost.find((r) => r.id === queued.id)!.deleted!;
    expect(tombstones.find((r) => r.id === queued.id)!.deleted).toEqual(queuedDeleted);
    expect(
      await t.dataSource.query('SELECT id FROM credentials WHERE id = $1 AND dropped IS NOT NULL', [credential.id]),
    ).toHaveLength(1);
    const [computed] = await t.dataSource.query<{ status: string; terminated: Date | null }[]>(
      'SELECT status, terminated FROM compute_instances WHERE id = $1',
      [instance.instanceId],
    );
    expect(computed).toMatchObject({ status: 'TERMINATED', terminated: expect.any(Date) });
    expect(
      await t.dataSource.query('SELECT id FROM compute_usage_periods WHERE instance_id = $1 AND ended_at IS NULL', [
        instance.instanceId,
      ]),
    ).toEqual([]);

    // The customer: the database is gone, its name free again (on a server that answers).
    await t.http.get(path(kept.name)).set(auth).expect(404);
    const listed = (await t.http.get(path()).set(auth).expect(200)).body as { name: string }[];
    expect(listed.map((d) => d.name)).toEqual([elsewhere.name]);
    await t.http.post(path()).set(auth).send({ databaseName: kept.name, region: REGION }).expect(201);
    await waitForStatus(t, auth, slug, kept.name, 'READY');
    expect(await t.dataSource.query('SELECT * FROM databases WHERE id = $1', [elsewhere.id])).toEqual(elsewhereBefore);
    // Every process lets it go: the data-plane health check no longer lists it.
    await eventually(async () => {
      const body = (await t.http.get('/health/data-plane')).body as { servers: { id: string }[] };
      return body.servers.every((s) => s.id !== lost);
    }, 10000);
  }, 180000);

  it('refuses an unknown server', async () => {
    const unknown = await cli(['server:remove', '--id', '00000000-0000-4000-8000-000000000000', '--lost']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No data-plane server/);
  });
});

describe('a server that answers, only not as it should (server:remove --lost)', () => {
  let t: TestApp & { metadataUrl: string };
  const cli = (args: string[]) => runCli(args, { DATABASE_URL: t.metadataUrl });
  beforeAll(async () => {
    t = await createIsolatedTestApp({ DATA_PLANE_CONNECT_TIMEOUT_MS: '1000' });
  }, 60000);
  afterAll(() => t?.close());

  it('is not written off: a TLS handshake its URL asks for and it refuses is an answer', async () => {
    const added = await cli(['server:add', '--region', REGION, '--url', SECOND_URL()]);
    const id = (added.json as { id: string }).id;
    expect((await cli(['server:disable', '--id', id])).code).toBe(0);
    // Misconfigured: the URL now asks for TLS, which the server does not offer.
    const url = new URL(SECOND_URL());
    url.searchParams.set('sslmode', 'require');
    await t.dataSource.query('UPDATE data_plane_servers SET admin_url_ciphertext = $2 WHERE id = $1', [
      id,
      t.app.get(SecretBox).seal(url.toString()),
    ]);
    expect(await t.app.get(DataPlane).reachable(id)).toBe(true);
    const removed = await cli(['server:remove', '--id', id, '--lost']);
    expect(removed.code).toBe(1);
    expect(removed.stderr).toMatch(/answers; it is not lost/);
    expect(await t.dataSource.query('SELECT id FROM data_plane_servers WHERE id = $1', [id])).toHaveLength(1);
  }, 60000);
});

describe('what waited for a server when it was written off as lost', () => {
  let t: TestApp & { metadataUrl: string };
  let link: TcpRelay;
  const built: string[] = [];
  const cli = (args: string[]) => runCli(args, { DATABASE_URL: t.metadataUrl });
  beforeAll(async () => {
    link = await TcpRelay.inFrontOf(SECOND_URL());
    t = await createIsolatedTestApp({
      DATABASE_POOL_TARGET: '0',
      DATA_PLANE_CONNECT_TIMEOUT_MS: '1000',
      INSTANT_DATABASES_MAX_UNCLAIMED: '1',
      INSTANT_DATABASES_PER_ADDRESS_PER_HOUR: '100',
    });
  }, 60000);
  afterAll(async () => {
    await t?.close();
    await link?.down();
    await dropFromSecondCluster(built);
  });

  it('an unclaimed instant database stops holding its place under INSTANT_DATABASES_MAX_UNCLAIMED, and a build job still queued is done, not failed at every attempt', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const { slug } = await createWorkspace(t, auth);
    const first = await serverIdOf(t, REGION);
    const added = await cli(['server:add', '--region', REGION, '--url', link.through(SECOND_URL())]);
    const lost = (added.json as { id: string }).id;
    expect((await cli(['server:drain', '--id', first])).code).toBe(0);
    const instant = await t.http.post('/databases/provision').send({ region: REGION });
    expect(instant.status).toBe(201);
    // A database not built yet, its build job's placement the server about to be lost.
    const name = `queued_${unique()}`;
    await t.http.post(`/workspaces/${slug}/databases`).set(auth).send({ databaseName: name, region: REGION });
    const rows = await t.dataSource.query<{ id: string; physical_name: string; server_id: string; name: string }[]>(
      'SELECT id, physical_name, server_id, name FROM databases WHERE server_id = $1',
      [lost],
    );
    expect(rows).toHaveLength(2);
    built.push(...rows.map((r) => r.physical_name));
    const queued = rows.find((r) => r.name === name)!;

    expect((await cli(['server:activate', '--id', first])).code).toBe(0);
    expect((await cli(['server:disable', '--id', lost])).code).toBe(0);
    await link.down();
    const removed = await cli(['server:remove', '--id', lost, '--lost']);
    expect(removed.code).toBe(0);

    const next = await t.http.post('/databases/provision').send({ region: REGION });
    expect({ status: next.status, body: next.status === 201 ? 'created' : (next.body as unknown) }).toEqual({
      status: 201,
      body: 'created',
    });
    await expect(
      t.app.get(DatabaseLifecycle).provision(queued.id, { serverId: lost, physicalName: queued.physical_name }),
    ).resolves.toBeUndefined();
  }, 120000);
});
