import { DataPlaneServers } from '../../src/data-plane/data-plane-servers.service';
import { DataPlane } from '../../src/data-plane/data-plane.service';
import { WarmPool } from '../../src/databases/warm-pool.service';
import { Auth, createWorkspace, serverIdOf, unique, waitForStatus } from '../databases/support';
import { secondDataPlaneUrl } from '../support/second-data-plane';
import { TcpRelay } from '../support/tcp-relay';
import { createDeveloperWithToken, createIsolatedTestApp, eventually, TestApp } from '../support/test-app';

const REGION = 'AWS_US_WEST_2';
const SECOND_URL = secondDataPlaneUrl;

describe('placement while the emptier server of a region does not answer', () => {
  let t: TestApp & { metadataUrl: string };
  let link: TcpRelay;
  let auth: Auth;
  let slug: string;
  let first: string;
  /** Emptier than `first`: placement prefers it while it answers. */
  let stalled: string;
  const path = (name = '') => `/workspaces/${slug}/databases${name ? `/${name}` : ''}`;
  const serverOf = async (id: string) =>
    (await t.dataSource.query<{ server_id: string }[]>('SELECT server_id FROM databases WHERE id = $1', [id]))[0]
      .server_id;
  const create = async () => {
    const res = await t.http
      .post(path())
      .set(auth)
      .send({ databaseName: `placed_${unique()}`, region: REGION });
    expect(res.status).toBe(201);
    return { id: res.body.id as string, name: res.body.name as string, status: res.body.status as string };
  };

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
    await t.dataSource.query('UPDATE data_plane_servers SET max_databases = 100 WHERE id = $1', [first]);
    stalled = (
      await t.app.get(DataPlaneServers).add({ region: REGION, url: link.through(SECOND_URL()), maxDatabases: 1000 })
    ).id;
    // Each server's warm pool is full (one ready entry each).
    const pool = t.app.get(WarmPool);
    await pool.refill(first);
    await pool.refill(stalled);
  }, 120000);
  afterAll(async () => {
    await t?.close();
    await link?.down();
  });
  afterEach(() => link.resume());

  it('places new databases (and pool takes) on the healthy server, READY, and on the other again once it answers', async () => {
    const pool = t.app.get(WarmPool);
    // Healthy: the emptier server takes the new database, from its warm pool.
    const before = await create();
    expect(before.status).toBe('READY');
    expect(await serverOf(before.id)).toBe(stalled);
    // Its replacement is built before the server stalls: a ready pooled database waits there.
    await eventually(async () => (await pool.readyCountOn(stalled)) === 1, 30000);

    await link.stall();
    // A request for a database on it meets the outage (503 within the timeouts).
    const refused = await t.http.post(`${path(before.name)}/credentials`).set(auth);
    expect(refused.status).toBe(503);

    // The server did not answer: new databases go to the healthy one, the first from its pool.
    const placed = [];
    for (let i = 0; i < 4; i += 1) placed.push(await create());
    expect(await Promise.all(placed.map((d) => serverOf(d.id)))).toEqual(placed.map(() => first));
    for (const d of placed) await waitForStatus(t, auth, slug, d.name, 'READY');
    // The stalled server's pooled database was not handed out.
    expect(await pool.readyCountOn(stalled)).toBe(1);

    // Once it answers again, placement uses it again (it is still the emptier).
    link.resume();
    const again = await eventually(
      async () => {
        const d = await create();
        return (await serverOf(d.id)) === stalled ? d : null;
      },
      30000,
      500,
    );
    await waitForStatus(t, auth, slug, again.name, 'READY');
  }, 120000);
});

describe('a sharded create while one server of the region does not answer', () => {
  const CONNECT_TIMEOUT_MS = 4000;
  let t: TestApp & { metadataUrl: string };
  let link: TcpRelay;
  let auth: Auth;
  let slug: string;
  let first: string;
  let stalled: string;

  beforeAll(async () => {
    link = await TcpRelay.inFrontOf(SECOND_URL());
    t = await createIsolatedTestApp({
      DATABASE_POOL_TARGET: '0',
      WORKERS: 'off',
      DATA_PLANE_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
    });
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
    first = await serverIdOf(t, REGION);
    stalled = (
      await t.app.get(DataPlaneServers).add({ region: REGION, url: link.through(SECOND_URL()), maxDatabases: 1000 })
    ).id;
  }, 120000);
  afterAll(async () => {
    await t?.close();
    await link?.down();
  });

  it('takes a healthy server’s answer without waiting out the other’s connect timeout', async () => {
    // The test clusters have no citus: the healthy server says it has, the stalled one is asked for real.
    const dataPlane = t.app.get(DataPlane);
    const real = dataPlane.shardingAvailable.bind(dataPlane);
    const spy = jest
      .spyOn(dataPlane, 'shardingAvailable')
      .mockImplementation((serverId) => (serverId === first ? Promise.resolve(true) : real(serverId)));
    await link.stall();
    try {
      const start = Date.now();
      const res = await t.http
        .post(`/workspaces/${slug}/databases`)
        .set(auth)
        .send({ databaseName: `sharded_${unique()}`, region: REGION, sharded: true });
      const ms = Date.now() - start;
      expect(res.status).toBe(201);
      const [row] = await t.dataSource.query<{ server_id: string }[]>('SELECT server_id FROM databases WHERE id = $1', [
        res.body.id,
      ]);
      expect(row.server_id).toBe(first);
      expect(spy.mock.calls.map(([id]) => id)).toContain(stalled);
      // Before, the create waited for every server's answer: the stalled one's connect timeout.
      expect(ms).toBeLessThan(CONNECT_TIMEOUT_MS / 2);
    } finally {
      link.resume();
      spy.mockRestore();
    }
  }, 60000);
});
