import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { migrateDatabase } from '../../src/database/data-source-options';
import { createWorkspace, onDataPlane } from '../databases/support';
import { TcpRelay } from '../support/tcp-relay';
import {
  createDeveloperWithToken,
  createIsolatedMetadataDatabase,
  createIsolatedTestApp,
  createTestApp,
  dropMetadataDatabase,
  eventually,
  type TestApp,
} from '../support/test-app';

/** `database` on the password-checking data-plane cluster, as its admin. */
function dataPlaneUrl(database: string, login?: { user: string; password: string }): string {
  const url = new URL(process.env.DATA_PLANE_URL!);
  url.pathname = `/${database}`;
  if (login) {
    url.username = login.user;
    url.password = login.password;
  }
  return url.toString();
}

describe('the metadata database on a server shared with the data plane', () => {
  const suffix = randomBytes(4).toString('hex');
  const database = `cp_meta_shared_${suffix}`;
  // What a customer's credential is on that server: a login role with no grant of its own.
  const customer = { user: `cp_customer_${suffix}`, password: randomBytes(12).toString('hex') };

  beforeAll(async () => {
    await onDataPlane(async (db) => {
      // An install from before: its metadata database made with PostgreSQL's defaults (PUBLIC may connect).
      await db.query(`CREATE DATABASE ${database}`);
      await db.query(`CREATE ROLE ${customer.user} LOGIN PASSWORD '${customer.password}'`);
    });
  });
  afterAll(async () => {
    await onDataPlane(async (db) => {
      await db.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await db.query(`DROP ROLE IF EXISTS ${customer.user}`);
    });
  });

  it('is closed to every role but the one migrating it, from the first start of the upgraded control plane', async () => {
    const before = new Client({ connectionString: dataPlaneUrl(database, customer) });
    await before.connect(); // what the upgrade closes
    await before.end();

    await migrateDatabase(dataPlaneUrl(database));

    const after = new Client({ connectionString: dataPlaneUrl(database, customer) });
    await expect(after.connect()).rejects.toMatchObject({ code: '42501' }); // permission denied for database
    await after.end().catch(() => undefined);
    const [{ grants }] = await onDataPlane(
      async (db) =>
        (
          await db.query<{ grants: boolean }>(
            `SELECT has_database_privilege('public', $1, 'CONNECT') OR has_database_privilege('public', $1, 'TEMPORARY') AS grants`,
            [database],
          )
        ).rows,
    );
    expect(grants).toBe(false);
    // The control plane itself still connects, and a second start changes nothing.
    await expect(migrateDatabase(dataPlaneUrl(database))).resolves.toEqual([]);
  });
});

describe('a metadata lock held elsewhere (DATABASE_LOCK_TIMEOUT_MS)', () => {
  let t: TestApp & { metadataUrl: string };
  beforeAll(async () => {
    t = await createIsolatedTestApp({ DATABASE_LOCK_TIMEOUT_MS: '300', DATABASE_POOL_TARGET: '0' });
  });
  afterAll(() => t.close());

  it('costs the requests that need it a 503 after the timeout, not a pool connection for ever, and nothing else', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const ws = await createWorkspace(t, auth);
    const holder = new Client({ connectionString: t.metadataUrl });
    await holder.connect();
    try {
      // The region's placement lock, which every database create takes, held by another session.
      await holder.query("SELECT pg_advisory_lock(hashtextextended('placement:AWS_US_WEST_2', 0))");
      const creates = await Promise.all(
        // More than the pool's four connections: each waits its timeout and gives its connection back.
        Array.from({ length: 6 }, (_, i) =>
          t.http
            .post(`/workspaces/${ws.slug}/databases`)
            .set(auth)
            .send({ databaseName: `locked_${i}`, region: 'AWS_US_WEST_2' }),
        ),
      );
      for (const res of creates) {
        expect(res.status).toBe(503);
        expect(res.body).toEqual({ errorCode: 'server_error', message: expect.any(String), statusCode: 503 });
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      }
      await t.http.get('/developers/me').set(auth).expect(200);
      const rows = await t.dataSource.query('SELECT 1 FROM databases WHERE workspace_id = $1', [ws.id]);
      expect(rows).toEqual([]);
    } finally {
      await holder.end();
    }
    // Once it is let go, creates go through.
    await t.http
      .post(`/workspaces/${ws.slug}/databases`)
      .set(auth)
      .send({ databaseName: 'unlocked', region: 'AWS_US_WEST_2' })
      .expect(201);
  });
});

describe('a metadata session gone silent inside a transaction (DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS)', () => {
  let metadataUrl: string;
  let relay: TcpRelay;
  let t: TestApp | undefined;
  beforeAll(async () => {
    metadataUrl = await createIsolatedMetadataDatabase();
    relay = await TcpRelay.inFrontOf(metadataUrl);
    t = await createTestApp({
      DATABASE_URL: relay.through(metadataUrl),
      DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '1000',
      DATABASE_POOL_TARGET: '0',
    });
  });
  afterAll(async () => {
    relay.release();
    await t?.close();
    await relay.down();
    await dropMetadataDatabase(metadataUrl);
  });

  it('has its locks let go by the server after the timeout; its request answers 503 and leaves nothing behind', async () => {
    const app = t!;
    const { auth } = await createDeveloperWithToken(app.app);
    const ws = await createWorkspace(app, auth);
    // The create's transaction takes the region's placement lock; its insert never reaches the
    // server, as when the network to it goes silent or the process stops mid-transaction.
    relay.hold(/INSERT INTO databases/);
    const creating = app.http
      .post(`/workspaces/${ws.slug}/databases`)
      .set(auth)
      .send({ databaseName: 'silent', region: 'AWS_US_WEST_2' })
      .then();
    await eventually(() => Promise.resolve(relay.heldBackCount === 1));

    const other = new Client({ connectionString: metadataUrl });
    await other.connect();
    try {
      // Another session (another API process's create) gets the lock within about the timeout.
      // Before, the server kept it for as long as the silent session's TCP connection lived.
      await other.query(`SET lock_timeout = '5s'`);
      const started = Date.now();
      await other.query("SELECT pg_advisory_lock(hashtextextended('placement:AWS_US_WEST_2', 0))");
      expect(Date.now() - started).toBeLessThan(3000);
      await other.query('SELECT pg_advisory_unlock_all()');
    } finally {
      await other.end();
    }

    relay.release();
    const res = await creating;
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ errorCode: 'server_error', message: expect.any(String), statusCode: 503 });
    expect(await app.dataSource.query('SELECT 1 FROM databases WHERE workspace_id = $1', [ws.id])).toEqual([]);
    // The pool has let the lost session go: the next create goes through.
    await app.http
      .post(`/workspaces/${ws.slug}/databases`)
      .set(auth)
      .send({ databaseName: 'after_silence', region: 'AWS_US_WEST_2' })
      .expect(201);
  });
});
