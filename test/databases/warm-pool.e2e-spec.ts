import { Client } from 'pg';
import { randomUUID } from 'node:crypto';
import { AppConfig } from '../../src/config/app-config';
import { DataPlaneServerState } from '../../src/data-plane/data-plane-server.entity';
import { DataPlaneServers } from '../../src/data-plane/data-plane-servers.service';
import { DataPlane } from '../../src/data-plane/data-plane.service';
import { physicalDatabaseName } from '../../src/data-plane/physical-names';
import { migrateDatabase } from '../../src/database/data-source-options';
import { refillPoolJobId } from '../../src/databases/database-jobs';
import { Placement } from '../../src/databases/placement.service';
import { PooledDatabaseEntity } from '../../src/databases/pooled-database.entity';
import { WarmPool } from '../../src/databases/warm-pool.service';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { Queues } from '../../src/queues/queue-names';
import { untilAsleep, withSlowRows } from '../support/slow-rows';
import {
  createDeveloperWithToken,
  createIsolatedTestApp,
  createTestApp,
  eventually,
  reconcile,
  TestApp,
} from '../support/test-app';
import {
  Auth,
  createWorkspace,
  databaseRow,
  gateNextCall,
  loseLockSession,
  onDataPlane,
  serverIdOf,
  unique,
  waitForStatus,
} from './support';

/**
 * The pool is shared by everything using one metadata database, so this spec runs on a metadata
 * database of its own: other specs' creates cannot take its pooled databases.
 */
describe('warm pool', () => {
  let t: TestApp;
  let auth: Auth;
  let slug: string;
  let metadataUrl: URL;
  let pool: WarmPool;

  beforeAll(async () => {
    metadataUrl = new URL(process.env.DATABASE_URL!);
    metadataUrl.pathname = `${metadataUrl.pathname}_pool`;
    await migrateDatabase(metadataUrl.toString());
    t = await createTestApp({ DATABASE_URL: metadataUrl.toString(), DATABASE_POOL_TARGET: '2' });
    pool = t.app.get(WarmPool);
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
  });

  afterAll(async () => {
    await t.close();
    const admin = new URL(metadataUrl);
    admin.pathname = '/postgres';
    const db = new Client({ connectionString: admin.toString() });
    await db.connect();
    await db.query(`DROP DATABASE IF EXISTS ${db.escapeIdentifier(metadataUrl.pathname.slice(1))} WITH (FORCE)`);
    await db.end();
  });

  const pooledRows = async (region: string) =>
    t.dataSource.query<{ physical_name: string; ready: boolean }[]>(
      'SELECT physical_name, ready FROM pooled_databases WHERE region = $1',
      [region],
    );

  it('keeps the target number of pre-built, hardened, unassigned databases in each creatable region', async () => {
    await reconcile(t.app);
    await eventually(
      async () => (await pool.readyCount('AWS_US_WEST_2')) === 2 && (await pool.readyCount('AWS_EU_CENTRAL_1')) === 2,
      60000,
    );
    const pooled = [...(await pooledRows('AWS_US_WEST_2')), ...(await pooledRows('AWS_EU_CENTRAL_1'))];
    expect(pooled).toHaveLength(4);
    const physical = await onDataPlane(async (db) => {
      const { rows } = await db.query(
        `SELECT datname, pg_get_userbyid(datdba) AS owner, has_database_privilege('public', oid, 'CONNECT') AS open
           FROM pg_database WHERE datname = ANY($1) ORDER BY datname`,
        [pooled.map((p) => p.physical_name)],
      );
      return rows;
    });
    expect(physical).toEqual(
      pooled
        .map((p) => p.physical_name)
        .sort()
        .map((datname) => ({ datname, owner: `${process.env.DATA_PLANE_NAME_PREFIX}databases`, open: false })),
    );
    expect(await pooledRows('AZURE_EASTUS')).toEqual([]);
  });

  it('hands a create a pooled database, READY in the same request, and refills the pool', async () => {
    await eventually(async () => (await pool.readyCount('AWS_US_WEST_2')) === 2, 60000);
    const before = (await pooledRows('AWS_US_WEST_2')).map((p) => p.physical_name);
    const name = `pooled_${unique()}`;
    const res = await t.http
      .post(`/workspaces/${slug}/databases`)
      .set(auth)
      .send({ databaseName: name, region: 'AWS_US_WEST_2' })
      .expect(201);
    expect(res.body.status).toBe('READY');
    const row = await databaseRow(t, res.body.id);
    expect(before).toContain(row.physical_name);
    expect(res.body.dbHost).toMatch(new RegExp(`/${row.physical_name}$`));
    expect((await pooledRows('AWS_US_WEST_2')).map((p) => p.physical_name)).not.toContain(row.physical_name);

    await eventually(async () => (await pool.readyCount('AWS_US_WEST_2')) === 2, 60000);
    const after = (await pooledRows('AWS_US_WEST_2')).map((p) => p.physical_name);
    expect(after).not.toContain(row.physical_name);
  });

  it('gives concurrent creates distinct databases, pooled while they last and built for the rest', async () => {
    await eventually(async () => (await pool.readyCount('AWS_EU_CENTRAL_1')) === 2, 60000);
    const names = Array.from({ length: 4 }, () => `burst_${unique()}`);
    const results = await Promise.all(
      names.map((databaseName) =>
        t.http.post(`/workspaces/${slug}/databases`).set(auth).send({ databaseName, region: 'AWS_EU_CENTRAL_1' }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    expect(results.filter((r) => r.body.status === 'READY').length).toBeGreaterThanOrEqual(2);
    const physical = new Set<string>();
    for (const name of names) {
      const ready = await waitForStatus(t, auth, slug, name, 'READY');
      physical.add((await databaseRow(t, ready.id)).physical_name);
    }
    expect(physical.size).toBe(4);
  });

  it('runs refills of one region in turn: a re-run of a stalled refill never drops a database the other made ready', async () => {
    await eventually(
      async () => (await pool.readyCount('AWS_US_WEST_2')) === 2 && (await pool.readyCount('AWS_EU_CENTRAL_1')) === 2,
      60000,
    );
    // An entry a crashed refill left half-built, in the place of one a create took (the pool keeps
    // its target, so nothing is given back): both runs find it.
    const id = randomUUID();
    const physical = physicalDatabaseName(t.app.get(AppConfig).env.DATA_PLANE_NAME_PREFIX, id);
    const server = await serverIdOf(t, 'AWS_US_WEST_2');
    await t.dataSource.query(
      'DELETE FROM pooled_databases WHERE id = (SELECT id FROM pooled_databases WHERE server_id = $1 AND ready LIMIT 1)',
      [server],
    );
    await t.dataSource
      .getRepository(PooledDatabaseEntity)
      .insert({ id, region: 'AWS_US_WEST_2', serverId: server, physicalName: physical, ready: false, lastError: null });
    const dataPlane = t.app.get(DataPlane);
    const build = dataPlane.buildDatabase.bind(dataPlane);
    let calls = 0;
    // The first build of the entry succeeds; a second one (the other run) fails once the first
    // run has marked the entry ready, so that run cleans up what it thinks is its half-made database.
    const spy = jest.spyOn(dataPlane, 'buildDatabase').mockImplementation(async (serverId, name, options) => {
      if (name !== physical) return build(serverId, name, options);
      calls += 1;
      if (calls === 1) return build(serverId, name, options);
      await eventually(
        async () => (await pooledRows('AWS_US_WEST_2')).some((p) => p.physical_name === physical && p.ready),
        10000,
      );
      throw new Error('simulated failure of the second build');
    });
    try {
      await Promise.allSettled([pool.refill(server), pool.refill(server)]);
    } finally {
      spy.mockRestore();
    }
    const rows = await pooledRows('AWS_US_WEST_2');
    expect(rows.find((p) => p.physical_name === physical)?.ready).toBe(true);
    for (const entry of rows.filter((p) => p.ready)) {
      expect({
        entry: entry.physical_name,
        exists: await dataPlane.databaseExists(server, entry.physical_name),
      }).toEqual({
        entry: entry.physical_name,
        exists: true,
      });
      expect(await dataPlane.isDatabaseHardened(server, entry.physical_name)).toBe(true);
    }
  });

  it('is off with a target of 0: nothing is taken from it', async () => {
    const off = await createTestApp({ DATABASE_URL: metadataUrl.toString(), DATABASE_POOL_TARGET: '0' });
    try {
      await eventually(async () => (await pool.readyCount('AWS_US_WEST_2')) >= 1, 60000);
      const res = await off.http
        .post(`/workspaces/${slug}/databases`)
        .set(auth)
        .send({ databaseName: `nopool_${unique()}`, region: 'AWS_US_WEST_2' })
        .expect(201);
      expect(res.body.status).toBe('REQUESTED');
    } finally {
      await off.close();
    }
  });
});

describe('warm pool on a server with one free place', () => {
  let t: TestApp & { metadataUrl: string };
  let auth: Auth;

  beforeAll(async () => {
    // No workers: the pool is refilled only when the test says so.
    t = await createIsolatedTestApp({ DATABASE_POOL_TARGET: '1', WORKERS: 'off' });
    auth = (await createDeveloperWithToken(t.app)).auth;
  });
  afterAll(() => t.close());

  it('never overfills the server: a refill that comes while a create takes the last place adds no entry', async () => {
    const server = await serverIdOf(t, 'AWS_US_WEST_2');
    const { slug } = await createWorkspace(t, auth);
    const placement = t.app.get(Placement);
    await t.dataSource.query('UPDATE data_plane_servers SET max_databases = 1 WHERE id = $1', [server]);
    expect(await placement.livingOn(server)).toBe(0);
    // The create's insert waits 1 s inside its transaction, after it has read the one free place
    // (the pool is empty, so it takes a new one); the refill runs meanwhile.
    const [created] = await withSlowRows(
      t.dataSource,
      { table: 'databases', on: 'INSERT', when: `NEW.server_id = '${server}'::uuid`, seconds: 1 },
      () => {
        const create = t.http
          .post(`/workspaces/${slug}/databases`)
          .set(auth)
          .send({ databaseName: `last_${unique()}`, region: 'AWS_US_WEST_2' })
          .then((res) => res);
        const refill = (async () => {
          await untilAsleep(t.dataSource);
          await t.app.get(WarmPool).refill(server);
        })();
        return Promise.all([create, refill]);
      },
    );
    expect(created.status).toBe(201);
    expect(created.body.status).toBe('REQUESTED');
    expect(
      await t.dataSource.query('SELECT physical_name FROM pooled_databases WHERE server_id = $1', [server]),
    ).toEqual([]);
    expect(await placement.livingOn(server)).toBe(1);
  });
});

describe('warm pool after a refill job failed for good', () => {
  let t: TestApp & { metadataUrl: string };

  beforeAll(async () => {
    // One attempt, so a failed refill is final at once.
    t = await createIsolatedTestApp({ DATABASE_POOL_TARGET: '1', JOB_ATTEMPTS: '1' });
  });
  afterAll(() => t.close());

  it('is refilled by the next reconcile pass: the failed job kept under the same id does not swallow it', async () => {
    const server = await serverIdOf(t, 'AWS_US_WEST_2');
    const pool = t.app.get(WarmPool);
    const queue = t.app.get(JobDispatcher).queue(Queues.DatabaseLifecycle);
    // The server is out of reach for as long as the refill's attempts last.
    const spy = jest.spyOn(pool, 'refill').mockRejectedValue(new Error('data-plane server unreachable'));
    try {
      await reconcile(t.app);
      await eventually(async () => (await queue.getJob(refillPoolJobId(server)))?.isFailed());
    } finally {
      spy.mockRestore();
    }
    expect(await pool.readyCountOn(server)).toBe(0);

    // The server answers again: the reconciler's pass refills its pool.
    await reconcile(t.app);
    await eventually(async () => (await pool.readyCountOn(server)) === 1, 30000);
  });
});

describe('warm pool entries another run or a create has taken', () => {
  let t: TestApp & { metadataUrl: string };
  let auth: Auth;
  let server: string;
  let pool: WarmPool;
  let dataPlane: DataPlane;
  const pooledOn = () =>
    t.dataSource.query<{ id: string; physical_name: string; ready: boolean; last_error: string | null }[]>(
      'SELECT id, physical_name, ready, last_error FROM pooled_databases WHERE server_id = $1 ORDER BY created, id',
      [server],
    );

  beforeAll(async () => {
    // No workers: the pool is refilled only when the test says so.
    t = await createIsolatedTestApp({ DATABASE_POOL_TARGET: '2', WORKERS: 'off' });
    auth = (await createDeveloperWithToken(t.app)).auth;
    server = await serverIdOf(t, 'AWS_US_WEST_2');
    pool = t.app.get(WarmPool);
    dataPlane = t.app.get(DataPlane);
  });
  afterAll(() => t.close());

  it('a refill that lost its lock session and then fails a build leaves the entry another run made ready, and its database', async () => {
    // An entry a crashed refill left half-built.
    const id = randomUUID();
    const physical = physicalDatabaseName(t.app.get(AppConfig).env.DATA_PLANE_NAME_PREFIX, id);
    await t.dataSource
      .getRepository(PooledDatabaseEntity)
      .insert({ id, region: 'AWS_US_WEST_2', serverId: server, physicalName: physical, ready: false, lastError: null });
    // The first run's build of the entry is slow and ends up failing.
    const build = gateNextCall(dataPlane, 'buildDatabase', () => {
      throw new Error('simulated failure of a build whose lock session was lost');
    });
    try {
      const slow = pool.refill(server);
      slow.catch(() => undefined);
      await build.started;
      // Its lock session is lost (the server dropped it): the server's refill lock is free again.
      await loseLockSession(`warm-pool-refill:${server}`);
      // Another run takes the lock, builds the entry and marks it ready.
      await pool.refill(server);
      expect((await pooledOn()).find((p) => p.id === id)).toMatchObject({ ready: true, last_error: null });
      build.release();
      await expect(slow).rejects.toThrow('simulated failure of a build whose lock session was lost');
    } finally {
      build.release();
      build.restore();
    }
    // The late failure neither drops the ready entry's database nor marks the entry failed.
    expect(await dataPlane.databaseExists(server, physical)).toBe(true);
    expect(await dataPlane.isDatabaseHardened(server, physical)).toBe(true);
    expect((await pooledOn()).find((p) => p.id === id)).toMatchObject({ ready: true, last_error: null });
  });

  it('a server that stops being ACTIVE gives back only the pooled databases no create has taken', async () => {
    await pool.refill(server);
    const entries = await pooledOn();
    expect(entries.map((p) => p.ready)).toEqual([true, true]);
    const { slug } = await createWorkspace(t, auth);
    // The create takes a pooled database, then its insert waits 2 s inside its transaction; the
    // server is drained and its pool given back meanwhile.
    const [created] = await withSlowRows(
      t.dataSource,
      { table: 'databases', on: 'INSERT', when: `NEW.server_id = '${server}'::uuid`, seconds: 2 },
      () => {
        const create = t.http
          .post(`/workspaces/${slug}/databases`)
          .set(auth)
          .send({ databaseName: `taken_${unique()}`, region: 'AWS_US_WEST_2' })
          .then((res) => res);
        const giveBack = (async () => {
          await untilAsleep(t.dataSource);
          await t.app.get(DataPlaneServers).setState(server, DataPlaneServerState.Draining);
          await pool.refill(server);
        })();
        return Promise.all([create, giveBack]);
      },
    );
    expect(created.status).toBe(201);
    expect(created.body.status).toBe('READY');
    const taken = (await databaseRow(t, created.body.id)).physical_name;
    expect(entries.map((p) => p.physical_name)).toContain(taken);
    // The create's database is there, hardened; the entry nobody took is given back, row and database.
    expect(await dataPlane.databaseExists(server, taken)).toBe(true);
    expect(await dataPlane.isDatabaseHardened(server, taken)).toBe(true);
    expect(await pooledOn()).toEqual([]);
    const other = entries.find((p) => p.physical_name !== taken)!;
    expect(await dataPlane.databaseExists(server, other.physical_name)).toBe(false);
  });
});

describe('a warm pool turned down', () => {
  const apps: TestApp[] = [];
  afterEach(async () => {
    for (const app of apps.reverse()) await app.close();
    apps.length = 0;
  });

  /** An app of its own with the first server's pool filled to `target` (no workers: it changes only when the test says so). */
  async function filledPool(target: number) {
    const full = await createIsolatedTestApp({ DATABASE_POOL_TARGET: String(target), WORKERS: 'off' });
    apps.push(full);
    const server = await serverIdOf(full, 'AWS_US_WEST_2');
    const pooledOn = () =>
      full.dataSource.query<{ physical_name: string; ready: boolean }[]>(
        'SELECT physical_name, ready FROM pooled_databases WHERE server_id = $1 ORDER BY created, id',
        [server],
      );
    await full.app.get(WarmPool).refill(server);
    const built = await pooledOn();
    expect(built.map((p) => p.ready)).toEqual(Array(target).fill(true));
    return { full, server, pooledOn, built, dataPlane: full.app.get(DataPlane) };
  }

  it('gives back what is above a lowered target, and everything once turned off (a target of 0), a drained server’s included, at the next reconcile pass', async () => {
    const { full, server, pooledOn, built, dataPlane } = await filledPool(2);

    const lowered = await createTestApp({ DATABASE_URL: full.metadataUrl, DATABASE_POOL_TARGET: '1' });
    apps.push(lowered);
    await reconcile(lowered.app);
    await eventually(async () => (await pooledOn()).length === 1, 30000);
    // The oldest goes, row and database; the other stays ready for creates.
    expect(await pooledOn()).toEqual([built[1]]);
    expect(await dataPlane.databaseExists(server, built[0].physical_name)).toBe(false);
    expect(await dataPlane.databaseExists(server, built[1].physical_name)).toBe(true);

    const off = await createTestApp({ DATABASE_URL: full.metadataUrl, DATABASE_POOL_TARGET: '0' });
    apps.push(off);
    await off.app.get(DataPlaneServers).setState(server, DataPlaneServerState.Draining);
    await reconcile(off.app);
    await eventually(async () => (await pooledOn()).length === 0, 30000);
    expect(await dataPlane.databaseExists(server, built[1].physical_name)).toBe(false);
    // Nothing lives on the drained server any more: server:remove would not be held back by it.
    expect(await off.app.get(Placement).livingOn(server)).toBe(0);
  }, 120000);

  it('trims exactly to a lowered target while a create is taking an entry: the taken one counts as gone, no other is dropped', async () => {
    const { full, server, pooledOn, built, dataPlane } = await filledPool(3);

    const lowered = await createTestApp({
      DATABASE_URL: full.metadataUrl,
      DATABASE_POOL_TARGET: '2',
      WORKERS: 'off',
    });
    apps.push(lowered);
    const { auth } = await createDeveloperWithToken(lowered.app);
    const { slug } = await createWorkspace(lowered, auth);
    // The create takes an entry, then its insert waits 2 s in its transaction while the trim runs.
    const [created] = await withSlowRows(
      lowered.dataSource,
      { table: 'databases', on: 'INSERT', when: `NEW.server_id = '${server}'::uuid`, seconds: 2 },
      () =>
        Promise.all([
          lowered.http
            .post(`/workspaces/${slug}/databases`)
            .set(auth)
            .send({ databaseName: `taken_${unique()}`, region: 'AWS_US_WEST_2' })
            .then((res) => res),
          (async () => {
            await untilAsleep(lowered.dataSource);
            await lowered.app.get(WarmPool).refill(server);
          })(),
        ]),
    );
    expect(created.body.status).toBe('READY');
    const taken = (await databaseRow(lowered, created.body.id)).physical_name;
    const left = await pooledOn();
    expect(left.map((p) => p.physical_name).sort()).toEqual(
      built
        .map((p) => p.physical_name)
        .filter((name) => name !== taken)
        .sort(),
    );
    for (const { physical_name } of left) expect(await dataPlane.databaseExists(server, physical_name)).toBe(true);
  }, 120000);
});

describe('warm pool while an operator lowers a server’s capacity', () => {
  let t: TestApp & { metadataUrl: string };

  beforeAll(async () => {
    // No processors: only the refill this spec runs builds entries.
    t = await createIsolatedTestApp({ DATABASE_POOL_TARGET: '3', WORKERS: 'off' });
  });
  afterAll(() => t.close());

  it('a refill under way reserves against the capacity of the moment: it stops at the lowered one', async () => {
    const server = await serverIdOf(t, 'AWS_US_WEST_2');
    const pooledOn = async () =>
      (
        await t.dataSource.query<{ n: number }[]>(
          'SELECT count(*)::int AS n FROM pooled_databases WHERE server_id = $1',
          [server],
        )
      )[0].n;
    expect(await pooledOn()).toBe(0);
    // The first entry's "ready" write waits inside its transaction; the capacity is lowered meanwhile.
    await withSlowRows(
      t.dataSource,
      { table: 'pooled_databases', on: 'UPDATE', when: `NEW.server_id = '${server}'::uuid AND NEW.ready`, seconds: 1 },
      async () => {
        const refill = t.app.get(WarmPool).refill(server);
        await untilAsleep(t.dataSource);
        await t.app.get(DataPlaneServers).update(server, { maxDatabases: 1 });
        await refill;
      },
    );
    expect(await pooledOn()).toBe(1);
  });
});
