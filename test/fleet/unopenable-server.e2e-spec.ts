import { DataPlaneServers } from '../../src/data-plane/data-plane-servers.service';
import { Auth, createWorkspace, serverIdOf, unique } from '../databases/support';
import { secondDataPlaneUrl } from '../support/second-data-plane';
import {
  createDeveloperWithToken,
  createIsolatedMetadataDatabase,
  createTestApp,
  dropMetadataDatabase,
  eventually,
  TestApp,
} from '../support/test-app';

const REGION = 'AWS_US_WEST_2';

/**
 * A server whose admin URL this process cannot open: sealed with a key it does not have, as after
 * `server:add` or `secrets:reseal` run with a new first key before every replica was given it.
 */
describe('a data-plane server whose admin URL this process cannot open', () => {
  let t: TestApp;
  let metadataUrl: string;
  const env = () => ({ DATABASE_POOL_TARGET: '0', DATABASE_DELETION_GRACE_SECONDS: '3600', DATABASE_URL: metadataUrl });
  let auth: Auth;
  let slug: string;
  let first: string;
  let unopenable: string;

  beforeAll(async () => {
    metadataUrl = await createIsolatedMetadataDatabase();
    t = await createTestApp(env());
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
    first = await serverIdOf(t, REGION);
    await t.dataSource.query('UPDATE data_plane_servers SET max_databases = 100 WHERE id = $1', [first]);
    // Emptier than the first: placement would prefer it while it counts as answering.
    unopenable = (
      await t.app.get(DataPlaneServers).add({ region: REGION, url: secondDataPlaneUrl(), maxDatabases: 1000 })
    ).id;
    await t.dataSource.query(
      "UPDATE data_plane_servers SET admin_url_ciphertext = 'keyNotHere:AAAA:AAAA:AAAA' WHERE id = $1",
      [unopenable],
    );
    // A new process's view: nothing of the server is remembered yet.
    await t.close();
    t = await createTestApp(env());
  }, 120000);
  afterAll(async () => {
    await t?.close();
    await dropMetadataDatabase(metadataUrl);
  });

  it('is reported down by /health/data-plane, beside the servers that answer', async () => {
    const res = await t.http.get('/health/data-plane');
    expect(res.status).toBe(200);
    const servers = (res.body as { servers: { id: string; region: string; up: boolean }[] }).servers;
    expect(servers.filter((s) => s.region === REGION).map(({ id, up }) => ({ id, up }))).toEqual(
      expect.arrayContaining([
        { id: first, up: true },
        { id: unopenable, up: false },
      ]),
    );
  });

  it('gets no new database once it failed one: they go to the server that answers, and are READY', async () => {
    const placed: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      const res = await t.http
        .post(`/workspaces/${slug}/databases`)
        .set(auth)
        .send({ databaseName: `placed_${unique()}`, region: REGION });
      expect(res.status).toBe(201);
      placed.push(res.body.id as string);
    }
    const rows = await t.dataSource.query<{ id: string; server_id: string }[]>(
      'SELECT id, server_id FROM databases WHERE id = ANY($1)',
      [placed],
    );
    // At most the first, placed before anything was asked of the server, went there.
    expect(rows.filter((r) => r.server_id === unopenable).length).toBeLessThanOrEqual(1);
    expect(rows.slice(1).every((r) => r.server_id === first)).toBe(true);
    await eventually(async () => {
      const ready = await t.dataSource.query<{ n: number }[]>(
        "SELECT count(*)::int AS n FROM databases WHERE server_id = $1 AND id = ANY($2) AND status = 'READY'",
        [first, placed],
      );
      return ready[0].n === rows.filter((r) => r.server_id === first).length;
    }, 30000);
  }, 60000);
});
