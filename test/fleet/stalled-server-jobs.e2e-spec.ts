import { DataPlaneServers } from '../../src/data-plane/data-plane-servers.service';
import { DataPlane } from '../../src/data-plane/data-plane.service';
import { DatabaseStatus } from '../../src/databases/database.entity';
import { Auth, createWorkspace, databaseRow, serverIdOf, unique, waitForStatus } from '../databases/support';
import { secondDataPlaneUrl } from '../support/second-data-plane';
import { TcpRelay } from '../support/tcp-relay';
import { waitForInstance } from '../compute/support';
import { createDeveloperWithToken, createIsolatedTestApp, eventually, reconcile, TestApp } from '../support/test-app';

const REGION = 'AWS_US_WEST_2';
const CONNECT_TIMEOUT_MS = 3000;

/**
 * Builds, finalizations, refills and compute changes of every server share a process's job slots.
 * Once a server is known not to answer, its jobs fail at once (retried later) instead of each
 * holding a slot for the connect timeout, so builds on other servers keep their pace; one job at a
 * time still asks the stalled server, and finds it back.
 */
describe("a stalled data-plane server's jobs", () => {
  let t: TestApp;
  let link: TcpRelay;
  let auth: Auth;
  let slug: string;
  let first: string;
  let second: string;

  beforeAll(async () => {
    link = await TcpRelay.inFrontOf(secondDataPlaneUrl());
    t = await createIsolatedTestApp({
      DATABASE_POOL_TARGET: '0',
      DATABASE_DELETION_GRACE_SECONDS: '3600',
      DATA_PLANE_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      JOB_BACKOFF_MS: '500',
    });
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
    first = await serverIdOf(t, REGION);
    second = (await t.app.get(DataPlaneServers).add({ region: REGION, url: link.through(secondDataPlaneUrl()) })).id;
  }, 120000);

  afterAll(async () => {
    link?.resume();
    await t?.close();
    await link?.down();
  });

  const create = (name = `s_${unique()}`) =>
    t.http.post(`/workspaces/${slug}/databases`).set(auth).send({ databaseName: name, region: REGION }).expect(201);

  it('do not hold up the builds of other servers, and build once the server answers again', async () => {
    // Every new database goes to the second server while the first is full; then it stalls.
    await t.dataSource.query('UPDATE data_plane_servers SET max_databases = 0 WHERE id = $1', [first]);
    await link.stall();
    const stalled: string[] = [];
    for (let i = 0; i < 12; i++) stalled.push((await create()).body.id as string);
    for (const id of stalled) expect((await databaseRow(t, id)).server_id).toBe(second);
    const dataPlane = t.app.get(DataPlane);
    await eventually(() => Promise.resolve(!dataPlane.answering(second)), 3 * CONNECT_TIMEOUT_MS);

    // A database on the first server is built at its usual pace (well under the stalled server's
    // builds waiting their connect timeouts in turn: 12 of them, 3 at a time, take 4 × 3 s).
    await t.dataSource.query('UPDATE data_plane_servers SET max_databases = 100 WHERE id = $1', [first]);
    const name = `h_${unique()}`;
    const started = Date.now();
    const healthy = (await create(name)).body as { id: string };
    expect((await databaseRow(t, healthy.id)).server_id).toBe(first);
    await eventually(
      async () => (await databaseRow(t, healthy.id)).status === DatabaseStatus.Ready,
      4 * CONNECT_TIMEOUT_MS,
      50,
    );
    expect(Date.now() - started).toBeLessThan(2 * CONNECT_TIMEOUT_MS);

    // What the stalled builds record for operators says why, though they no longer asked.
    const errors = await t.dataSource.query<{ last_error: string | null }[]>(
      'SELECT last_error FROM databases WHERE id = ANY($1) AND last_error IS NOT NULL',
      [stalled],
    );
    expect(errors.length).toBeGreaterThan(0);
    for (const { last_error } of errors) expect(last_error).toMatch(/timeout|terminated/i);

    // The server answers again: its builds are done (a later attempt, or the reconciler's).
    link.resume();
    for (const id of stalled) {
      await eventually(async () => (await databaseRow(t, id)).status === DatabaseStatus.Ready, 60000, 200);
    }
    await waitForStatus(t, auth, slug, name, 'READY');
  }, 120000);

  it("do not hold up compute changes of other servers' databases, and are made once the server answers again", async () => {
    const ready = async (server: string) =>
      (
        await t.dataSource.query<{ name: string }[]>(
          "SELECT name FROM databases WHERE server_id = $1 AND status = 'READY' AND deleted IS NULL ORDER BY created",
          [server],
        )
      ).map((r) => r.name);
    const onSecond = (await ready(second)).slice(0, 9);
    expect(onSecond).toHaveLength(9);
    const [healthy] = await ready(first);
    const dataPlane = t.app.get(DataPlane);
    await link.stall();
    await t.http.post(`/workspaces/${slug}/databases/${onSecond[0]}/credentials`).set(auth).expect(503);
    await eventually(() => Promise.resolve(!dataPlane.answering(second)), 3 * CONNECT_TIMEOUT_MS);

    const instance = (db: string) =>
      t.http
        .post(`/workspaces/${slug}/databases/${db}/compute`)
        .set(auth)
        .send({ instanceSize: 'dc-small', instanceName: `c_${unique()}` })
        .expect(202);
    const stalledInstances = [];
    for (const db of onSecond) stalledInstances.push({ db, id: (await instance(db)).body.instanceId as string });
    // The healthy server's change is made at its usual pace (well under the stalled server's changes
    // waiting their connect timeouts in turn: 9 of them, 3 at a time, take 3 × 3 s).
    const started = Date.now();
    const made = (await instance(healthy)).body.instanceId as string;
    await waitForInstance(t, auth, slug, healthy, made, 'READY');
    expect(Date.now() - started).toBeLessThan(2 * CONNECT_TIMEOUT_MS);

    link.resume();
    await reconcile(t.app);
    for (const { db, id } of stalledInstances) await waitForInstance(t, auth, slug, db, id, 'READY');
  }, 120000);

  it('do not hold up the builds of other servers when the server stops answering on the connections already open (a partition: nothing sent there is answered), and build once it answers again', async () => {
    const dataPlane = t.app.get(DataPlane);
    const status = async (id: string) => (await databaseRow(t, id)).status;
    // Builds on the second server, three at once (as many as the jobs that run at once), leave its
    // pools with as many open connections (kept 10 s idle).
    await t.dataSource.query('UPDATE data_plane_servers SET max_databases = 0 WHERE id = $1', [first]);
    const warm = (await Promise.all([create(), create(), create()])).map((res) => res.body.id as string);
    for (const id of warm) await eventually(async () => (await status(id)) === DatabaseStatus.Ready, 30000, 50);
    expect(dataPlane.answering(second)).toBe(true);

    // From now on nothing sent to the server is answered, on open connections and new ones alike.
    link.hold(/[\s\S]/);
    const partitioned: string[] = [];
    for (let i = 0; i < 6; i++) partitioned.push((await create()).body.id as string);
    // The jobs that meet it first wait about the connect timeout, not the statement or DDL timeout.
    await eventually(() => Promise.resolve(!dataPlane.answering(second)), 3 * CONNECT_TIMEOUT_MS);

    await t.dataSource.query('UPDATE data_plane_servers SET max_databases = 100 WHERE id = $1', [first]);
    const started = Date.now();
    const healthy = (await create()).body as { id: string };
    expect((await databaseRow(t, healthy.id)).server_id).toBe(first);
    await eventually(async () => (await status(healthy.id)) === DatabaseStatus.Ready, 4 * CONNECT_TIMEOUT_MS, 50);
    expect(Date.now() - started).toBeLessThan(2 * CONNECT_TIMEOUT_MS);

    link.release();
    await reconcile(t.app);
    for (const id of partitioned) {
      await eventually(async () => (await status(id)) === DatabaseStatus.Ready, 60000, 200);
    }
  }, 120000);
});
