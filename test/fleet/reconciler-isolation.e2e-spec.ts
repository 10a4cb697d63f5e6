import { Client } from 'pg';
import { DataPlaneServerState } from '../../src/data-plane/data-plane-server.entity';
import { DataPlaneServers } from '../../src/data-plane/data-plane-servers.service';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import {
  Auth,
  createReadyDatabase,
  createWorkspace,
  databaseRow,
  DatabaseBody,
  physicalDatabaseExists,
  roleExists,
  serverIdOf,
  unique,
} from '../databases/support';
import { secondDataPlaneUrl } from '../support/second-data-plane';
import { TcpRelay } from '../support/tcp-relay';
import { createDeveloperWithToken, createIsolatedTestApp, reconcile, TestApp } from '../support/test-app';

const REGION = 'AWS_US_WEST_2';
/** What one wait for a server that does not answer costs (DATA_PLANE_CONNECT_TIMEOUT_MS here). */
const CONNECT_TIMEOUT_MS = 1000;
/** A reconcile pass with one server stalled: about one wait per task that needs it, and the healthy work. */
const PASS_BOUND_MS = 8 * CONNECT_TIMEOUT_MS;
/** The reconciler's batch (SWEEP_BATCH in the sweeps). */
const SWEEP_BATCH = 500;

const SECOND_URL = secondDataPlaneUrl;

async function onSecondServer<T>(work: (db: Client) => Promise<T>): Promise<T> {
  const db = new Client({ connectionString: SECOND_URL() });
  await db.connect();
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

const databaseExistsOnSecond = (physical: string) =>
  onSecondServer(
    async (db) => (await db.query('SELECT 1 FROM pg_database WHERE datname = $1', [physical])).rowCount === 1,
  );

/** How long one reconcile pass takes, or null when it has not ended within `limitMs` (it goes on). */
async function timedPass(t: TestApp, limitMs: number): Promise<number | null> {
  const start = Date.now();
  const pass = reconcile(t.app).then(() => Date.now() - start);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), limitMs)));
  try {
    return await Promise.race([pass, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('the reconciler while one data-plane server of the fleet does not answer', () => {
  let t: TestApp & { metadataUrl: string };
  /** The second data-plane cluster behind a relay that can stall. */
  let link: TcpRelay;
  let auth: Auth;
  let workspace: { id: string; slug: string };
  let first: string;
  let stalled: string;
  const path = (name = '') => `/workspaces/${workspace.slug}/databases${name ? `/${name}` : ''}`;

  beforeAll(async () => {
    link = await TcpRelay.inFrontOf(SECOND_URL());
    t = await createIsolatedTestApp({
      DATABASE_POOL_TARGET: '0',
      DATABASE_DELETION_GRACE_SECONDS: '3600',
      DATA_PLANE_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
    });
    auth = (await createDeveloperWithToken(t.app)).auth;
    workspace = await createWorkspace(t, auth);
    first = await serverIdOf(t, REGION);
    stalled = (
      await t.app.get(DataPlaneServers).add({ region: REGION, url: link.through(SECOND_URL()), maxDatabases: 1000 })
    ).id;
  }, 120000);
  afterAll(async () => {
    await t?.close();
    await link?.down();
  });
  afterEach(() => link.resume());

  /** New databases of the region go to `server` only. */
  async function placeOn(server: string): Promise<void> {
    const servers = t.app.get(DataPlaneServers);
    for (const id of [first, stalled]) {
      await servers.setState(id, id === server ? DataPlaneServerState.Active : DataPlaneServerState.Draining);
    }
  }

  /** Deletes the databases, makes their deletion due and loses their finalization jobs. */
  async function deleteOverdue(databases: DatabaseBody[]): Promise<void> {
    const queue = t.app.get(JobDispatcher).queue('database-lifecycle');
    for (const db of databases) {
      await t.http.delete(path(db.name)).set(auth).expect(200);
      await (await queue.getJob(`finalize:${db.id}`))?.remove();
    }
    await t.dataSource.query(
      "UPDATE databases SET deletion_due_at = now() - interval '1 second' WHERE id = ANY($1::uuid[])",
      [databases.map((db) => db.id)],
    );
  }

  const finalizedOf = async (ids: string[]) =>
    (
      await t.dataSource.query<{ id: string }[]>(
        'SELECT id FROM databases WHERE id = ANY($1::uuid[]) AND finalized IS NOT NULL',
        [ids],
      )
    ).map((r) => r.id);

  it("costs a pass about one connect timeout however many deletions wait on the stalled server, and finalizes the other server's", async () => {
    await placeOn(stalled);
    const waiting = await Promise.all(Array.from({ length: 10 }, () => createReadyDatabase(t, auth, workspace.slug)));
    await placeOn(first);
    const healthy = await createReadyDatabase(t, auth, workspace.slug);
    const healthyPhysical = (await databaseRow(t, healthy.id)).physical_name;
    const waitingPhysical = await Promise.all(waiting.map(async (db) => (await databaseRow(t, db.id)).physical_name));
    await deleteOverdue([...waiting, healthy]);

    await link.stall();
    // Before, each of the ten waited out the connect timeout in turn: 11 s and more.
    const ms = await timedPass(t, 60000);
    expect(ms).not.toBeNull();
    expect(ms!).toBeLessThan(PASS_BOUND_MS);
    expect(await finalizedOf([healthy.id])).toEqual([healthy.id]);
    expect(await physicalDatabaseExists(healthyPhysical)).toBe(false);
    expect(await finalizedOf(waiting.map((db) => db.id))).toEqual([]);

    // Once the server answers again, the next pass finalizes what waited there.
    link.resume();
    await reconcile(t.app);
    expect((await finalizedOf(waiting.map((db) => db.id))).sort()).toEqual(waiting.map((db) => db.id).sort());
    for (const physical of waitingPhysical) expect(await databaseExistsOnSecond(physical)).toBe(false);
  }, 120000);

  it("never lets a batch's worth of deletions stuck on the stalled server keep another server's out of the pass", async () => {
    await placeOn(first);
    const healthy = await createReadyDatabase(t, auth, workspace.slug);
    await deleteOverdue([healthy]);
    // A full batch of deletions on the stalled server, all more overdue than the healthy one.
    const stuck = (
      await t.dataSource.query<{ id: string }[]>(
        `INSERT INTO databases (workspace_id, name, region, server_id, status, physical_name, deleted, deletion_due_at)
         SELECT $1, 'stuck_' || $2 || '_' || i, $3, $4, 'READY', $5 || md5($2 || i),
                now() - interval '2 hours', now() - interval '1 hour' - i * interval '1 second'
           FROM generate_series(1, $6::int) AS i
         RETURNING id`,
        [workspace.id, unique(), REGION, stalled, process.env.DATA_PLANE_NAME_PREFIX, SWEEP_BATCH],
      )
    ).map((r) => r.id);
    try {
      await link.stall();
      // Before, the pass went through the oldest 500 (all on the stalled server), one connect
      // timeout each, and the healthy server's deletion was never in a batch.
      const ms = await timedPass(t, PASS_BOUND_MS);
      expect(ms).not.toBeNull();
      expect(await finalizedOf([healthy.id])).toEqual([healthy.id]);
      expect(await finalizedOf(stuck)).toEqual([]);
    } finally {
      link.resume();
      // They never had a physical database: finalized here so later passes do not meet them.
      await t.dataSource.query('UPDATE databases SET finalized = now() WHERE id = ANY($1::uuid[])', [stuck]);
    }
  }, 120000);

  it("costs the credentials sweep about one connect timeout however many credentials wait on the stalled server, and drops the other server's expired ones", async () => {
    await placeOn(stalled);
    const stalledDb = await createReadyDatabase(t, auth, workspace.slug);
    await placeOn(first);
    const healthyDb = await createReadyDatabase(t, auth, workspace.slug);
    const issue = async (db: DatabaseBody) =>
      (
        (
          await t.http
            .post(`${path(db.name)}/credentials`)
            .set(auth)
            .expect(200)
        ).body as { id: string }
      ).id;
    // Expired (their jobs lost) and still waiting for their expiry (the sweep re-asserts VALID UNTIL).
    const expired: string[] = [];
    const later: string[] = [];
    for (let i = 0; i < 8; i += 1) expired.push(await issue(stalledDb));
    for (let i = 0; i < 4; i += 1) later.push(await issue(stalledDb));
    const healthyExpired = await issue(healthyDb);
    await t.dataSource.query(
      "UPDATE credentials SET expires_at = now() - interval '1 second' WHERE id = ANY($1::uuid[])",
      [[...expired, healthyExpired]],
    );
    await t.dataSource.query(
      "UPDATE credentials SET expires_at = now() + interval '1 hour' WHERE id = ANY($1::uuid[])",
      [later],
    );
    const dropped = async (ids: string[]) =>
      (
        await t.dataSource.query<{ id: string }[]>(
          'SELECT id FROM credentials WHERE id = ANY($1::uuid[]) AND dropped IS NOT NULL',
          [ids],
        )
      ).map((r) => r.id);

    await link.stall();
    // Before, each of them waited out the connect timeout in turn: 13 s and more.
    const ms = await timedPass(t, 60000);
    expect(ms).not.toBeNull();
    expect(ms!).toBeLessThan(PASS_BOUND_MS);
    expect(await dropped([healthyExpired])).toEqual([healthyExpired]);
    expect(await roleExists(healthyExpired)).toBe(false);
    expect(await dropped([...expired, ...later])).toEqual([]);

    // Once the server answers again, the next pass drops what waited there.
    link.resume();
    await reconcile(t.app);
    expect((await dropped(expired)).sort()).toEqual([...expired].sort());
    expect(await dropped(later)).toEqual([]);

    await deleteOverdue([stalledDb, healthyDb]);
    await reconcile(t.app);
    expect(await finalizedOf([stalledDb.id, healthyDb.id])).toHaveLength(2);
  }, 120000);
});
