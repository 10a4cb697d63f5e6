import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { CREATABLE_REGIONS } from '../../src/config/regions';
import { migrateDatabase } from '../../src/database/data-source-options';
import { DataPlaneServerState } from '../../src/data-plane/data-plane-server.entity';
import { DataPlaneServers } from '../../src/data-plane/data-plane-servers.service';
import { DataPlane } from '../../src/data-plane/data-plane.service';
import { DatabaseEntity } from '../../src/databases/database.entity';
import { DatabasesService } from '../../src/databases/databases.service';
import { Placement } from '../../src/databases/placement.service';
import { DataPlaneFleet1795448293373 } from '../../src/migrations/1795448293373-DataPlaneFleet';
import { WorkspaceEntity } from '../../src/workspaces/workspace.entity';
import { Auth, createWorkspace, databaseRow, queryAs, serverIdOf, unique, waitForStatus } from '../databases/support';
import { runCli } from '../identity/identity-support';
import { secondDataPlaneUrl } from '../support/second-data-plane';
import { withSlowRows } from '../support/slow-rows';
import { TcpRelay } from '../support/tcp-relay';
import { installBefore, upgradeSpecUrl } from '../support/upgrade';
import {
  createDeveloperWithToken,
  createIsolatedMetadataDatabase,
  createIsolatedTestApp,
  createTestApp,
  dropMetadataDatabase,
  eventually,
  reconcile,
  TestApp,
} from '../support/test-app';

const REGION = 'AWS_US_WEST_2';
const FIRST_URL = () => process.env.DATA_PLANE_URL!;

/** The PostgreSQL cluster's identifier, asked of it directly. */
async function systemIdentifierOf(url: string): Promise<string> {
  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    return (await db.query<{ id: string }>('SELECT system_identifier::text AS id FROM pg_control_system()')).rows[0].id;
  } finally {
    await db.end();
  }
}
const SECOND_URL = secondDataPlaneUrl;

/** Runs `work` with an admin session on one data-plane cluster. */
async function onServer<T>(url: string, work: (db: Client) => Promise<T>): Promise<T> {
  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

const databaseExistsOn = (url: string, physical: string) =>
  onServer(
    url,
    async (db) => (await db.query('SELECT 1 FROM pg_database WHERE datname = $1', [physical])).rowCount === 1,
  );

/** The credential-looking members of a database's owner role on a cluster. */
const credentialRolesOn = (url: string, physical: string) =>
  onServer(url, async (db) => {
    const { rows } = await db.query<{ rolname: string }>(
      `SELECT r.rolname FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member
         JOIN pg_roles o ON o.oid = m.roleid WHERE o.rolname = $1 ORDER BY 1`,
      [`${physical}_owner`],
    );
    return rows.map((r) => r.rolname);
  });

describe('a fleet: two password-checking data-plane servers in one region', () => {
  let t: TestApp & { metadataUrl: string };
  let auth: Auth;
  let slug: string;
  let first: string;
  let second: string;
  let added: Awaited<ReturnType<typeof runCli>>;
  /** The second server as registered: through a relay that can stall it for this spec alone. */
  let link: TcpRelay;
  const secondUrl = () => link.through(SECOND_URL());
  const cli = (args: string[]) => runCli(args, { DATABASE_URL: t.metadataUrl });
  const path = (name = '') => `/workspaces/${slug}/databases${name ? `/${name}` : ''}`;
  const serverOfDatabase = async (id: string) =>
    (await t.dataSource.query<{ server_id: string }[]>('SELECT server_id FROM databases WHERE id = $1', [id]))[0]
      .server_id;

  async function create(name = `fleet_${unique()}`) {
    const res = await t.http.post(path()).set(auth).send({ databaseName: name, region: REGION });
    return res;
  }

  beforeAll(async () => {
    link = await TcpRelay.inFrontOf(SECOND_URL());
    t = await createIsolatedTestApp({
      DATABASE_POOL_TARGET: '0',
      DATABASE_DELETION_GRACE_SECONDS: '3600',
      DATA_PLANE_CONNECT_TIMEOUT_MS: '2000',
      DATA_PLANE_LOCK_TIMEOUT_MS: '1000',
      DATA_PLANE_STATEMENT_TIMEOUT_MS: '10000',
    });
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
    first = await serverIdOf(t, REGION);
    await t.dataSource.query('UPDATE data_plane_servers SET max_databases = 4 WHERE id = $1', [first]);
    added = await cli(['server:add', '--region', REGION, '--url', secondUrl(), '--max-databases', '2']);
    second = (added.json as { id: string } | undefined)?.id ?? '';
  }, 120000);
  afterAll(async () => {
    await t?.close();
    await link?.down();
  });

  it('server:add checks the server, saves it with its URL sealed and prints it without the URL', async () => {
    expect({ code: added.code, stderr: added.stderr }).toEqual({ code: 0, stderr: '' });
    expect(added.json).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      region: REGION,
      publicHost: new URL(secondUrl()).host,
      maxDatabases: 2,
      state: 'ACTIVE',
      created: expect.any(String),
      updated: expect.any(String),
    });
    const password = decodeURIComponent(new URL(secondUrl()).password);
    expect(added.stdout).not.toContain(password);
    const [row] = await t.dataSource.query<{ admin_url_ciphertext: string }[]>(
      'SELECT admin_url_ciphertext FROM data_plane_servers WHERE id = $1',
      [second],
    );
    expect(row.admin_url_ciphertext).not.toContain(password);
    expect(row.admin_url_ciphertext).not.toContain(String(link.port));

    const refused = new URL(secondUrl());
    refused.password = 'not-the-password';
    const bad = await cli(['server:add', '--region', REGION, '--url', refused.toString()]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/cannot serve as a data-plane server: password authentication failed/);
    expect(bad.stderr).not.toContain('not-the-password');

    // libpq's other spelling: the host in the query. It names no host customers could be given.
    const url = new URL(secondUrl());
    const hostInQuery = `postgres:///postgres?host=${url.hostname}&port=${url.port}&user=${url.username}&password=${url.password}`;
    const hostless = await cli(['server:add', '--region', REGION, '--url', hostInQuery]);
    expect(hostless.code).toBe(1);
    expect(hostless.stderr).toMatch(/--public-host is required: the URL names no host/);

    // One cluster is one server of a region: the second again (its identifier recorded when it was
    // added), and the first, registered from the environment before identifiers were (it is asked
    // for its own).
    const again = await cli(['server:add', '--region', REGION, '--url', secondUrl()]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`This PostgreSQL cluster is registered already in ${REGION}, as server ${second}`);
    const firstAgain = await cli(['server:add', '--region', REGION, '--url', FIRST_URL()]);
    expect(firstAgain.code).toBe(1);
    expect(firstAgain.stderr).toContain(
      `This PostgreSQL cluster is registered already in ${REGION}, as server ${first}`,
    );
    const identifiers = await t.dataSource.query<{ id: string; system_identifier: string }[]>(
      'SELECT id, system_identifier FROM data_plane_servers WHERE region = $1 ORDER BY created',
      [REGION],
    );
    expect(identifiers).toEqual([
      { id: first, system_identifier: await systemIdentifierOf(FIRST_URL()) },
      { id: second, system_identifier: await systemIdentifierOf(secondUrl()) },
    ]);
    // Another region's server may be the same cluster (by default every region's first server is
    // DATA_PLANE_URL's): its admin URL can still be changed, to the one it has.
    const euFirst = await serverIdOf(t, 'AWS_EU_CENTRAL_1');
    const euUpdate = await cli(['server:update', '--id', euFirst, '--url', FIRST_URL()]);
    expect({ code: euUpdate.code, stderr: euUpdate.stderr }).toEqual({ code: 0, stderr: '' });
    const [{ eu }] = await t.dataSource.query<{ eu: string }[]>(
      'SELECT system_identifier AS eu FROM data_plane_servers WHERE id = $1',
      [euFirst],
    );
    expect(eu).toBe(await systemIdentifierOf(FIRST_URL()));
  });

  it('places each new database on the ACTIVE server with the most room, ties to the one with fewer databases', async () => {
    // first: room for 4, second: room for 2.
    const placed: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      const res = await create();
      expect(res.status).toBe(201);
      expect(res.body.expandable).toBe(true);
      placed.push(await serverOfDatabase(res.body.id));
      const ready = await waitForStatus(t, auth, slug, res.body.name, 'READY');
      const physical = (await databaseRow(t, res.body.id)).physical_name;
      const url = placed[i] === first ? FIRST_URL() : secondUrl();
      expect(ready.dbHost).toBe(`postgres://${new URL(url).host}/${physical}`);
      expect(await databaseExistsOn(url, physical)).toBe(true);
      expect(await databaseExistsOn(url === FIRST_URL() ? secondUrl() : FIRST_URL(), physical)).toBe(false);
    }
    expect(placed).toEqual([first, first, second, first]);

    const list = await cli(['server:list']);
    expect(list.code).toBe(0);
    const servers = list.json as unknown as {
      id: string;
      region: string;
      state: string;
      maxDatabases: number;
      databases: number;
    }[];
    expect(
      servers
        .filter((s) => s.region === REGION)
        .map((s) => ({ id: s.id, state: s.state, maxDatabases: s.maxDatabases, databases: s.databases })),
    ).toEqual([
      { id: first, state: 'ACTIVE', maxDatabases: 4, databases: 3 },
      { id: second, state: 'ACTIVE', maxDatabases: 2, databases: 1 },
    ]);
    expect(list.stdout).not.toContain('postgres://');
  });

  it('a drained server takes no new databases but keeps serving its own; a full region answers 503', async () => {
    const onFirst = (
      await t.dataSource.query<{ name: string }[]>(
        'SELECT name FROM databases WHERE server_id = $1 AND deleted IS NULL ORDER BY created LIMIT 1',
        [first],
      )
    )[0].name;
    const drained = await cli(['server:drain', '--id', first]);
    expect(drained.code).toBe(0);
    expect(drained.json).toMatchObject({ id: first, state: 'DRAINING' });

    const res = await create();
    expect(res.status).toBe(201);
    expect(await serverOfDatabase(res.body.id)).toBe(second);

    // first drains, second is full (2 of 2).
    const name = `full_${unique()}`;
    const full = await create(name);
    expect(full.status).toBe(503);
    expect(full.headers['retry-after']).toBe('5');
    expect(full.body).toEqual({
      errorCode: 'db_creation_failure',
      message: `No data-plane server of region ${REGION} has room for another database; retry later`,
      statusCode: 503,
    });
    expect(await t.dataSource.query('SELECT id FROM databases WHERE name = $1', [name])).toEqual([]);

    // The drained server's databases keep working: a new credential there logs in.
    const db = (await t.http.get(path(onFirst)).set(auth).expect(200)).body as { name: string; dbHost: string };
    const cred = (
      await t.http
        .post(`${path(onFirst)}/credentials`)
        .set(auth)
        .expect(200)
    ).body as {
      id: string;
      password: string;
    };
    await expect(queryAs(db.dbHost, cred.id, cred.password, 'SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);

    expect((await cli(['server:activate', '--id', first])).json).toMatchObject({ id: first, state: 'ACTIVE' });
    const again = await create();
    expect(again.status).toBe(201);
    expect(await serverOfDatabase(again.body.id)).toBe(first);
  });

  it('server:remove is refused while databases live on the server', async () => {
    const refused = await cli(['server:remove', '--id', second]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/still holds 2 database\(s\)/);
    expect(await t.dataSource.query('SELECT id FROM data_plane_servers WHERE id = $1', [second])).toHaveLength(1);
    const unknown = await cli(['server:remove', '--id', randomUUID()]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No data-plane server/);
  });

  it("server:update changes a server's capacity and public host at once; server:disable stops new databases there", async () => {
    const realHost = new URL(secondUrl()).host;
    // Only the second server could take a database, and it is full (2 of 2).
    expect((await cli(['server:drain', '--id', first])).code).toBe(0);
    try {
      expect((await create()).status).toBe(503);
      const updated = await cli([
        'server:update',
        '--id',
        second,
        '--max-databases',
        '3',
        '--public-host',
        'db2.example.test:6543',
      ]);
      expect({ code: updated.code, stderr: updated.stderr }).toEqual({ code: 0, stderr: '' });
      expect(updated.json).toMatchObject({ id: second, maxDatabases: 3, publicHost: 'db2.example.test:6543' });
      expect(updated.stdout).not.toContain(decodeURIComponent(new URL(secondUrl()).password));

      const name = `grown_${unique()}`;
      const placed = await create(name);
      expect(placed.status).toBe(201);
      expect(await serverOfDatabase(placed.body.id)).toBe(second);
      await waitForStatus(t, auth, slug, name, 'READY');
      // Every process reads the directory again within seconds: dbHost follows the new public host.
      await eventually(
        async () =>
          ((await t.http.get(path(name)).set(auth).expect(200)).body as { dbHost: string }).dbHost.startsWith(
            'postgres://db2.example.test:6543/',
          ),
        10000,
      );

      const disabled = await cli(['server:disable', '--id', second]);
      expect(disabled.json).toMatchObject({ id: second, state: 'DISABLED', maxDatabases: 3 });
      expect((await cli(['server:update', '--id', second, '--max-databases', '10'])).code).toBe(0);
      // Room, but disabled: the region has no server to place a database on, sharded or not.
      expect((await create()).status).toBe(503);
      const sharded = await t.http
        .post(path())
        .set(auth)
        .send({ databaseName: `sharded_${unique()}`, region: REGION, sharded: true });
      expect(sharded.status).toBe(503);
      expect(sharded.headers['retry-after']).toBeDefined();
      expect(sharded.body).toMatchObject({ errorCode: 'db_creation_failure', statusCode: 503 });
    } finally {
      await cli(['server:activate', '--id', first]);
      await cli(['server:activate', '--id', second]);
      await cli(['server:update', '--id', second, '--max-databases', '3', '--public-host', realHost]);
    }

    const nothing = await cli(['server:update', '--id', second]);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toMatch(/nothing to change/);
    const zero = await cli(['server:update', '--id', second, '--max-databases', '0']);
    expect(zero.code).toBe(1);
    expect(zero.stderr).toMatch(/--max-databases must be a whole number from 1/);
    // Past the int4 column (failed at PostgreSQL with its raw message) and in hex: refused first.
    for (const capacity of ['3000000000', '0x10']) {
      const refused = await cli(['server:update', '--id', second, '--max-databases', capacity]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/--max-databases must be a whole number from 1 to 2147483647/);
    }
    for (const host of ['db/other@host', 'postgres://db.example.com:notaport', 'db.example.com:99999']) {
      const badHost = await cli(['server:update', '--id', second, '--public-host', host]);
      expect(badHost.code).toBe(1);
      expect(badHost.stderr).toMatch(/--public-host must be HOST or HOST:PORT/);
    }
    const unknown = await cli(['server:update', '--id', randomUUID(), '--max-databases', '5']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No data-plane server/);
    expect(
      await t.dataSource.query('SELECT max_databases, public_host, state FROM data_plane_servers WHERE id = $1', [
        second,
      ]),
    ).toEqual([{ max_databases: 3, public_host: realHost, state: 'ACTIVE' }]);
  });

  it('a stalled server costs only the requests that need it: 503 within the timeouts, others unaffected, nothing orphaned', async () => {
    const on = async (server: string) =>
      (
        await t.dataSource.query<{ id: string; name: string; physical_name: string }[]>(
          `SELECT id, name, physical_name FROM databases
            WHERE server_id = $1 AND deleted IS NULL AND status = 'READY' ORDER BY created LIMIT 1`,
          [server],
        )
      )[0];
    const stalledDb = await on(second);
    const healthyDb = await on(first);
    expect(stalledDb).toBeDefined();
    expect(healthyDb).toBeDefined();
    // Warm the directory and the first server's pool, as a running service has them.
    await t.http
      .post(`${path(healthyDb.name)}/credentials`)
      .set(auth)
      .expect(200);

    // The second server hangs: its sessions stop answering and logins there wait out the connect
    // timeout. (Through the relay: a catalog lock on the cluster would hang every spec using it.)
    await link.stall();
    try {
      const timed = async <T>(work: () => Promise<T>) => {
        const start = Date.now();
        const result = await work();
        return { result, ms: Date.now() - start };
      };
      const stalled = Array.from({ length: 6 }, () =>
        timed(() => t.http.post(`${path(stalledDb.name)}/credentials`).set(auth)),
      );
      // Let the stalled creates get going first.
      await new Promise((r) => setTimeout(r, 300));
      const others = [
        ...Array.from({ length: 10 }, () => timed(() => t.http.get(path(healthyDb.name)).set(auth))),
        ...Array.from({ length: 5 }, () => timed(() => t.http.get('/developers/me').set(auth))),
        ...Array.from({ length: 5 }, () => timed(() => t.http.post(`${path(healthyDb.name)}/credentials`).set(auth))),
      ];
      const done = await Promise.all(others);
      expect(done.map((d) => d.result.status)).toEqual(Array(20).fill(200));
      // Normal latency: none of them waited for the stalled server's timeouts.
      expect(Math.max(...done.map((d) => d.ms))).toBeLessThan(2000);

      for (const { result, ms } of await Promise.all(stalled)) {
        expect(result.status).toBe(503);
        expect(result.headers['retry-after']).toBe('5');
        expect(result.body).toEqual({
          errorCode: 'credential_creation_failure',
          message: expect.stringContaining(`region ${REGION}`),
          statusCode: 503,
        });
        // Connect timeout (2 s) plus the request's own work.
        expect(ms).toBeLessThan(6000);
      }
      expect((await t.http.get('/health').expect(200)).body.status).toBe('ok');
      const readiness = (await t.http.get('/health/data-plane').expect(200)).body as {
        servers: { id: string; region: string; up: boolean }[];
      };
      expect(readiness.servers.filter((s) => s.region === REGION).map((s) => ({ id: s.id, up: s.up }))).toEqual([
        { id: first, up: true },
        { id: second, up: false },
      ]);
      // Nobody holds a password of a half-made credential.
      expect(
        (
          await t.http
            .get(`${path(stalledDb.name)}/credentials`)
            .set(auth)
            .expect(200)
        ).body,
      ).toEqual([]);
    } finally {
      link.resume();
    }

    // Once the server answers again, everything owed completes and nothing is left behind.
    await reconcile(t.app);
    await eventually(async () => {
      const open = await t.dataSource.query('SELECT id FROM credentials WHERE database_id = $1 AND dropped IS NULL', [
        stalledDb.id,
      ]);
      return open.length === 0;
    }, 30000);
    expect(await credentialRolesOn(secondUrl(), stalledDb.physical_name)).toEqual([]);
    const cred = (
      await t.http
        .post(`${path(stalledDb.name)}/credentials`)
        .set(auth)
        .expect(200)
    ).body as {
      id: string;
    };
    expect(await credentialRolesOn(secondUrl(), stalledDb.physical_name)).toEqual([cred.id]);
    await eventually(async () => {
      const body = (await t.http.get('/health/data-plane').expect(200)).body as { servers: { up: boolean }[] };
      return body.servers.every((s) => s.up);
    }, 10000);
  }, 120000);

  it('server:remove succeeds once the drained server’s databases are deleted and finalized; their tombstones stay, without the server', async () => {
    expect((await cli(['server:drain', '--id', second])).code).toBe(0);
    const onSecond = await t.dataSource.query<{ id: string; name: string; physical_name: string }[]>(
      'SELECT id, name, physical_name FROM databases WHERE server_id = $1 AND deleted IS NULL ORDER BY id',
      [second],
    );
    expect(onSecond.length).toBeGreaterThan(0);
    for (const db of onSecond) await t.http.delete(path(db.name)).set(auth).expect(200);
    // Deleted, but not finalized until their grace period has passed: they still live there.
    const early = await cli(['server:remove', '--id', second]);
    expect(early.code).toBe(1);
    expect(early.stderr).toMatch(new RegExp(`still holds ${onSecond.length} database\\(s\\)`));

    const ids = onSecond.map((d) => d.id);
    const tombstones = () =>
      t.dataSource.query<Record<string, unknown>[]>('SELECT * FROM databases WHERE id = ANY($1) ORDER BY id', [ids]);
    await t.dataSource.query("UPDATE databases SET deletion_due_at = now() - interval '1 second' WHERE id = ANY($1)", [
      ids,
    ]);
    await eventually(async () => {
      await reconcile(t.app);
      return (await tombstones()).every((r) => r.finalized !== null);
    }, 30000);
    for (const db of onSecond) expect(await databaseExistsOn(secondUrl(), db.physical_name)).toBe(false);
    const finalized = await tombstones();
    expect(finalized.map((r) => r.server_id)).toEqual(ids.map(() => second));

    const removed = await cli(['server:remove', '--id', second]);
    expect({ code: removed.code, stderr: removed.stderr }).toEqual({ code: 0, stderr: '' });
    expect(removed.json).toMatchObject({ id: second, region: REGION, state: 'DRAINING' });
    expect(await t.dataSource.query('SELECT id FROM data_plane_servers WHERE id = $1', [second])).toEqual([]);
    // The tombstones (billing history) are untouched but for the server they no longer live on…
    expect(await tombstones()).toEqual(finalized.map((r) => ({ ...r, server_id: null })));
    expect(
      await t.dataSource.query<{ n: number }[]>(
        'SELECT count(*)::int AS n FROM credentials WHERE database_id = ANY($1) AND dropped IS NULL',
        [ids],
      ),
    ).toEqual([{ n: 0 }]);
    // …and a boot does not attach them to another server of the region.
    await t.app.get(Placement).attachUnplaced();
    expect((await tombstones()).map((r) => r.server_id)).toEqual(ids.map(() => null));

    const listed = (await cli(['server:list'])).json as unknown as { id: string }[];
    expect(listed.map((s) => s.id)).toContain(first);
    expect(listed.map((s) => s.id)).not.toContain(second);
  }, 120000);
});

describe('placement of creates that arrive at once', () => {
  let t: TestApp & { metadataUrl: string };
  let auth: Auth;

  beforeAll(async () => {
    t = await createIsolatedTestApp({ DATABASE_POOL_TARGET: '0', WORKERS: 'off' });
    auth = (await createDeveloperWithToken(t.app)).auth;
  });
  afterAll(() => t.close());

  it('never overfills a server: creates of different workspaces take its free places in turn, the rest get 503', async () => {
    const server = await serverIdOf(t, REGION);
    await t.dataSource.query('UPDATE data_plane_servers SET max_databases = 2 WHERE id = $1', [server]);
    const slugs: string[] = [];
    for (let i = 0; i < 6; i += 1) slugs.push((await createWorkspace(t, auth)).slug);
    // Each workspace's creates take turns on its plan's lock, which does not order these: only the
    // region's placement turn does. Each insert on the server waits 0.3 s inside the create's
    // transaction, after its read of the free places: creates that did not take turns would all
    // read 2 free places and all be placed.
    const answers = await withSlowRows(
      t.dataSource,
      { table: 'databases', on: 'INSERT', when: `NEW.server_id = '${server}'::uuid`, seconds: 0.3 },
      () =>
        Promise.all(
          slugs.map((slug) =>
            t.http
              .post(`/workspaces/${slug}/databases`)
              .set(auth)
              .send({ databaseName: `burst_${unique()}`, region: REGION }),
          ),
        ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 503, 503, 503, 503]);
    for (const refused of answers.filter((a) => a.status === 503)) {
      expect(refused.headers['retry-after']).toBe('5');
      expect(refused.body).toEqual({
        errorCode: 'db_creation_failure',
        message: `No data-plane server of region ${REGION} has room for another database; retry later`,
        statusCode: 503,
      });
    }
    expect(
      await t.dataSource.query<{ n: number }[]>(
        'SELECT count(*)::int AS n FROM databases WHERE server_id = $1 AND finalized IS NULL',
        [server],
      ),
    ).toEqual([{ n: 2 }]);
  });
});

describe('an install from before the fleet', () => {
  let url: string;
  afterAll(() => dropMetadataDatabase(url));

  it('comes up with its regions’ servers registered from the environment and every database attached', async () => {
    url = upgradeSpecUrl('upgrade');
    // The metadata database as the release before the fleet left it, with databases in it.
    const previous = await installBefore(url, DataPlaneFleet1795448293373);
    const workspaceId = randomUUID();
    await previous.query(`INSERT INTO workspaces (id, name, slug) VALUES ($1, 'Old', $2)`, [
      workspaceId,
      `old-${unique()}`,
    ]);
    const prefix = process.env.DATA_PLANE_NAME_PREFIX!;
    const rows = [
      { id: randomUUID(), region: 'AWS_US_WEST_2', status: 'READY' },
      { id: randomUUID(), region: 'AWS_EU_CENTRAL_1', status: 'READY' },
      { id: randomUUID(), region: 'AWS_US_WEST_2', status: 'REQUESTED' },
    ];
    for (const r of rows) {
      await previous.query(
        `INSERT INTO databases (id, workspace_id, name, region, status, physical_name)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [r.id, workspaceId, `old_${unique()}`, r.region, r.status, `${prefix}old${r.id.replace(/-/g, '')}`],
      );
    }
    const pooledId = randomUUID();
    await previous.query(
      `INSERT INTO pooled_databases (id, region, physical_name, ready) VALUES ($1, 'AWS_EU_CENTRAL_1', $2, true)`,
      [pooledId, `${prefix}oldpool${pooledId.replace(/-/g, '')}`],
    );
    await previous.destroy();

    // The upgrade: migrations, then the first boot.
    await migrateDatabase(url);
    let t: TestApp | undefined = await createTestApp({
      DATABASE_URL: url,
      DATABASE_POOL_TARGET: '0',
      DATA_PLANE_PUBLIC_HOST_AWS_EU_CENTRAL_1: 'eu.db.example:6432',
    });
    try {
      const servers = await t.dataSource.query<{ id: string; region: string; public_host: string; state: string }[]>(
        'SELECT id, region, public_host, state FROM data_plane_servers ORDER BY region',
      );
      expect(servers).toEqual([
        { id: expect.any(String), region: 'AWS_EU_CENTRAL_1', public_host: 'eu.db.example:6432', state: 'ACTIVE' },
        { id: expect.any(String), region: 'AWS_US_WEST_2', public_host: new URL(FIRST_URL()).host, state: 'ACTIVE' },
      ]);
      const serverOf = Object.fromEntries(servers.map((s) => [s.region, s.id]));
      const attached = await t.dataSource.query<{ id: string; server_id: string }[]>(
        'SELECT id, server_id FROM databases ORDER BY id',
      );
      expect(attached).toEqual(
        rows.map((r) => ({ id: r.id, server_id: serverOf[r.region] })).sort((a, b) => a.id.localeCompare(b.id)),
      );
      expect(await t.dataSource.query('SELECT server_id FROM pooled_databases WHERE id = $1', [pooledId])).toEqual([
        { server_id: serverOf.AWS_EU_CENTRAL_1 },
      ]);
      // dbHost comes from the database's server.
      const eu = await t.dataSource.getRepository(DatabaseEntity).findOneByOrFail({ id: rows[1].id });
      const workspace = await t.dataSource.getRepository(WorkspaceEntity).findOneByOrFail({ id: workspaceId });
      expect((await t.app.get(DatabasesService).describe(eu, workspace)).dbHost).toBe(
        `postgres://eu.db.example:6432/${eu.physicalName}`,
      );
      await t.close();
      t = undefined;
      // A second boot registers nothing more.
      t = await createTestApp({ DATABASE_URL: url, DATABASE_POOL_TARGET: '0' });
      expect(await t.dataSource.query('SELECT id FROM data_plane_servers')).toHaveLength(2);
    } finally {
      await t?.close();
    }
  }, 120000);
});

describe('replicas booting together on a new metadata database', () => {
  it('register exactly one server per region between them', async () => {
    const url = await createIsolatedMetadataDatabase();
    let boots: PromiseSettledResult<TestApp>[] = [];
    try {
      // Each registration waits 0.3 s on its insert, inside its transaction (the database is this
      // test's own): replicas that did not take turns would all find the regions without a server.
      await onServer(url, (db) =>
        withSlowRows(db, { table: 'data_plane_servers', on: 'INSERT', when: 'true', seconds: 0.3 }, async () => {
          boots = await Promise.allSettled(
            [0, 1].map(() => createTestApp({ DATABASE_URL: url, DATABASE_POOL_TARGET: '0', WORKERS: 'off' })),
          );
        }),
      );
      expect(boots.map((b) => b.status)).toEqual(['fulfilled', 'fulfilled']);
      const servers = await onServer(url, async (db) => {
        const { rows } = await db.query<{ region: string; servers: number }>(
          'SELECT region, count(*)::int AS servers FROM data_plane_servers GROUP BY region ORDER BY region',
        );
        return rows;
      });
      expect(servers).toEqual([...CREATABLE_REGIONS].sort().map((region) => ({ region, servers: 1 })));
    } finally {
      for (const boot of boots) if (boot.status === 'fulfilled') await boot.value.close();
      await dropMetadataDatabase(url);
    }
  }, 60000);
});

describe('a server removed by another process', () => {
  it('is let go by every process at its next reconcile pass: its admin pool ends and leaves data_plane_pool_connections', async () => {
    const a = await createIsolatedTestApp({ DATABASE_POOL_TARGET: '0' });
    let b: TestApp | undefined;
    try {
      b = await createTestApp({
        DATABASE_URL: a.metadataUrl,
        DATABASE_POOL_TARGET: '0',
        OPERATOR_PASSWORD: 'operator-password-for-tests',
      });
      const added = await a.app.get(DataPlaneServers).add({ region: REGION, url: SECOND_URL() });
      // The other process works on it: its admin pool to the server exists.
      const dataPlaneB = b.app.get(DataPlane);
      await expect(dataPlaneB.databaseExists(added.id, 'postgres')).resolves.toBe(true);
      expect(dataPlaneB.adminPoolStats().map((p) => p.server)).toContain(added.id);

      await a.app.get(DataPlaneServers).remove(added.id, () => Promise.resolve(0));
      expect(
        a.app
          .get(DataPlane)
          .adminPoolStats()
          .map((p) => p.server),
      ).not.toContain(added.id);

      await reconcile(b.app);
      expect(dataPlaneB.adminPoolStats().map((p) => p.server)).not.toContain(added.id);
      const metrics = await b.http.get('/metrics').auth('operator', 'operator-password-for-tests').expect(200);
      expect(metrics.text).toContain('data_plane_pool_connections');
      expect(metrics.text).not.toContain(added.id);
      // Nor does it reach the server any more from what it had cached.
      await expect(dataPlaneB.databaseExists(added.id, 'postgres')).rejects.toThrow(/no data-plane server/);
    } finally {
      await b?.close();
      await a.close();
    }
  }, 60000);
});

describe("a region's last server", () => {
  it('is not removed (409): the next process start would register the environment’s server there again; once a replacement is added it can go, and stays gone across a restart', async () => {
    const a = await createIsolatedTestApp({ DATABASE_POOL_TARGET: '0' });
    let b: TestApp | undefined;
    try {
      const servers = a.app.get(DataPlaneServers);
      const only = await serverIdOf(a, REGION);
      const refused = await servers.remove(only, () => Promise.resolve(0)).catch((err: unknown) => err);
      expect(refused).toMatchObject({
        response: {
          errorCode: 'db_status_failure',
          statusCode: 409,
          message: expect.stringMatching(/is the last server of region AWS_US_WEST_2; add its replacement first/),
        },
      });
      const inRegion = async () =>
        (
          await a.dataSource.query<{ id: string }[]>('SELECT id FROM data_plane_servers WHERE region = $1', [REGION])
        ).map((r) => r.id);
      expect(await inRegion()).toEqual([only]);

      const replacement = await servers.add({ region: REGION, url: SECOND_URL() });
      await expect(servers.remove(only, () => Promise.resolve(0))).resolves.toMatchObject({ id: only });
      // A new process registers from the environment only where a region has no server.
      b = await createTestApp({ DATABASE_URL: a.metadataUrl, DATABASE_POOL_TARGET: '0' });
      expect(await inRegion()).toEqual([replacement.id]);
    } finally {
      await b?.close();
      await a.close();
    }
  }, 60000);
});

describe('a server whose admin URL changes (server:update --url)', () => {
  it('takes a URL that reaches the same server, seen by a running process at its next read of the fleet; refuses one that reaches another', async () => {
    const link = await TcpRelay.inFrontOf(SECOND_URL());
    const t = await createIsolatedTestApp({ DATABASE_POOL_TARGET: '0', DATA_PLANE_CONNECT_TIMEOUT_MS: '1000' });
    try {
      const cli = (args: string[], input?: string) => runCli(args, { DATABASE_URL: t.metadataUrl }, input);
      const servers = t.app.get(DataPlaneServers);
      // The second server, registered through the relay, the only one taking databases.
      const moved = (await servers.add({ region: REGION, url: link.through(SECOND_URL()), maxDatabases: 10 })).id;
      await servers.setState(await serverIdOf(t, REGION), DataPlaneServerState.Draining);
      const { auth } = await createDeveloperWithToken(t.app);
      const { slug } = await createWorkspace(t, auth);
      const name = `moved_${unique()}`;
      await t.http
        .post(`/workspaces/${slug}/databases`)
        .set(auth)
        .send({ databaseName: name, region: REGION })
        .expect(201);
      const db = await waitForStatus(t, auth, slug, name, 'READY');
      expect((await databaseRow(t, db.id)).server_id).toBe(moved);
      const sealed = async () =>
        (
          await t.dataSource.query<{ sealed: string }[]>(
            'SELECT admin_url_ciphertext AS sealed FROM data_plane_servers WHERE id = $1',
            [moved],
          )
        )[0].sealed;
      const before = await sealed();

      // Another server (the first one) does not hold its databases.
      const other = await cli(['server:update', '--id', moved, '--url', '-'], `${FIRST_URL()}\n`);
      expect(other.code).toBe(1);
      expect(other.stderr).toMatch(/the new URL cannot serve this server: it is not the server registered: 1 of the 1/);
      expect(await sealed()).toBe(before);

      // The server itself, without the relay.
      const updated = await cli(['server:update', '--id', moved, '--url', '-'], `${SECOND_URL()}\n`);
      expect({ code: updated.code, stderr: updated.stderr }).toEqual({ code: 0, stderr: '' });
      expect(updated.json).toMatchObject({ id: moved, region: REGION });
      expect(updated.stdout).not.toContain(decodeURIComponent(new URL(SECOND_URL()).password));
      expect(await sealed()).not.toBe(before);
      // Its cluster's identifier is recorded now (it was added without one).
      const [{ recorded }] = await t.dataSource.query<{ recorded: string }[]>(
        'SELECT system_identifier AS recorded FROM data_plane_servers WHERE id = $1',
        [moved],
      );
      expect(recorded).toBe(await systemIdentifierOf(SECOND_URL()));

      // The relay goes silent: the running app, which opened the old URL, reaches the server by the
      // new one once its copy of the fleet is a couple of seconds old (no reconcile pass needed).
      await link.stall();
      const path = `/workspaces/${slug}/databases/${name}/credentials`;
      let cred: { id: string; password: string } | undefined;
      await eventually(async () => {
        const res = await t.http.post(path).set(auth);
        if (res.status === 200) cred = res.body as { id: string; password: string };
        return res.status === 200;
      }, 15000);
      // (Customers' public host is still the relay's: checked on the server itself.)
      const direct = `postgres://${new URL(SECOND_URL()).host}/${(await databaseRow(t, db.id)).physical_name}`;
      await expect(queryAs(direct, cred!.id, cred!.password, 'SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
    } finally {
      await t.close();
      await link.down();
    }
  }, 90000);
});
