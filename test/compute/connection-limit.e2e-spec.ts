import { Client } from 'pg';
import { createDeveloperWithToken, createIsolatedTestApp, eventually, reconcile, TestApp } from '../support/test-app';
import {
  Auth,
  connectAs,
  connectWith,
  createReadyDatabase,
  createWorkspace,
  databaseRow,
  onDataPlane,
  unique,
  waitForStatus,
} from '../databases/support';
import { connectionLimit, InstanceBody, waitForInstance } from './support';

/** Kept tiny: the data-plane cluster is shared with other runs, so this spec never opens many sessions. */
const DEFAULT_LIMIT = 2;
const TOO_MANY_CONNECTIONS = '53300';
const INSUFFICIENT_PRIVILEGE = '42501';

interface Provisioned {
  database: { id: string; name: string; dbHost: string };
  user: string;
  password: string;
  connectionString: string;
}

/**
 * One tenant cannot take a shared data-plane server's connections: every database accepts
 * DATA_PLANE_DEFAULT_CONNECTION_LIMIT sessions (dedicated compute adds its connections on top),
 * from its build on (warm pool included), and the compute sweep puts the limit back on a database
 * that lacks it (an install from before the default, a limit changed on the server).
 * Its own metadata database: the sweep and the warm pool see only this spec's databases.
 */
describe('default connection limit', () => {
  let t: TestApp;
  let auth: Auth;
  let slug: string;
  const sessions: Client[] = [];
  beforeAll(async () => {
    t = await createIsolatedTestApp({
      DATA_PLANE_DEFAULT_CONNECTION_LIMIT: String(DEFAULT_LIMIT),
      DATABASE_POOL_TARGET: '1',
      INSTANT_DATABASES_PER_ADDRESS_PER_HOUR: '100',
    });
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
  });
  afterEach(async () => {
    await Promise.all(sessions.splice(0).map((s) => s.end().catch(() => undefined)));
  });
  afterAll(() => t.close());

  const prefix = process.env.DATA_PLANE_NAME_PREFIX!;
  const sessionsIn = (physical: string) =>
    onDataPlane(async (db) => {
      const { rows } = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1',
        [physical],
      );
      return rows[0].n;
    });
  const databaseOwner = (physical: string) =>
    onDataPlane(async (db) => {
      const { rows } = await db.query<{ owner: string }>(
        'SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = $1',
        [physical],
      );
      return rows[0]?.owner;
    });

  const setLimitByHand = (physical: string, limit: number) =>
    onDataPlane((db) => db.query(`ALTER DATABASE ${db.escapeIdentifier(physical)} CONNECTION LIMIT ${limit}`));

  it('an anonymous instant database accepts the default number of sessions and refuses the next one (53300)', async () => {
    const res = await t.http.post('/databases/provision').send({ region: 'AWS_US_WEST_2' }).expect(201);
    const p = res.body as Provisioned;
    expect(await connectionLimit(t, p.database.id)).toBe(DEFAULT_LIMIT);
    // The session that made its credential's role counts until its backend has exited.
    const { physical_name: physical } = await databaseRow(t, p.database.id);
    await eventually(() => sessionsIn(physical).then((n) => n === 0));
    for (let i = 0; i < DEFAULT_LIMIT; i += 1) sessions.push(await connectWith(p.connectionString));
    await expect(connectWith(p.connectionString)).rejects.toMatchObject({ code: TOO_MANY_CONNECTIONS });
    // A session ending makes room again (once its backend has exited).
    await sessions.pop()!.end();
    sessions.push(await eventually(() => connectWith(p.connectionString), 5000));
  });

  it('builds warm-pool databases with the default limit', async () => {
    await reconcile(t.app);
    const pooled = await eventually(async () => {
      const rows = await t.dataSource.query<{ physical_name: string }[]>(
        'SELECT physical_name FROM pooled_databases WHERE ready',
      );
      return rows.length ? rows : null;
    }, 60000);
    const limits = await onDataPlane(async (db) => {
      const { rows } = await db.query<{ datconnlimit: number }>(
        'SELECT datconnlimit FROM pg_database WHERE datname = ANY($1)',
        [pooled.map((p) => p.physical_name)],
      );
      return rows.map((r) => r.datconnlimit);
    });
    expect(limits.length).toBeGreaterThan(0);
    expect(new Set(limits)).toEqual(new Set([DEFAULT_LIMIT]));
  });

  it('puts the limit back at the next reconcile pass on a database that lacks it, compute on top', async () => {
    const name = `db_${unique()}`;
    await t.http
      .post(`/workspaces/${slug}/databases`)
      .set(auth)
      .send({ databaseName: name, region: 'AWS_US_WEST_2' })
      .expect(201);
    const { id } = await waitForStatus(t, auth, slug, name, 'READY');
    const { physical_name: physical } = await databaseRow(t, id);
    expect(await connectionLimit(t, id)).toBe(DEFAULT_LIMIT);

    // As a database of an install from before the default has it: no limit of its own.
    await setLimitByHand(physical, -1);
    await reconcile(t.app);
    expect(await connectionLimit(t, id)).toBe(DEFAULT_LIMIT);

    const instance = await t.http
      .post(`/workspaces/${slug}/databases/${name}/compute`)
      .set(auth)
      .send({ instanceSize: 'dc-small', instanceName: `ci_${unique()}` })
      .expect(202);
    await waitForInstance(t, auth, slug, name, (instance.body as InstanceBody).instanceId, 'READY');
    expect(await connectionLimit(t, id)).toBe(DEFAULT_LIMIT + 50);
    await setLimitByHand(physical, -1);
    await reconcile(t.app);
    expect(await connectionLimit(t, id)).toBe(DEFAULT_LIMIT + 50);
  });

  it("a credential cannot lift its database's limit (ALTER DATABASE is refused) and still makes what credentials make", async () => {
    const db = await createReadyDatabase(t, auth, slug);
    const { physical_name: physical } = await databaseRow(t, db.id);
    const res = await t.http.post(`/workspaces/${slug}/databases/${db.name}/credentials`).set(auth).expect(200);
    const { id, password } = res.body as { id: string; password: string };
    const session = await connectAs(db.dbHost!, id, password);
    sessions.push(session);
    const d = session.escapeIdentifier(physical);
    // Acting as the owner role (its login's default) and as itself: neither owns the database.
    for (const as of ['', 'RESET ROLE; ']) {
      await expect(session.query(`${as}ALTER DATABASE ${d} CONNECTION LIMIT -1`)).rejects.toMatchObject({
        code: INSUFFICIENT_PRIVILEGE,
      });
      await expect(session.query(`${as}ALTER DATABASE ${d} WITH ALLOW_CONNECTIONS false`)).rejects.toMatchObject({
        code: INSUFFICIENT_PRIVILEGE,
      });
    }
    await session.query(`SET ROLE ${session.escapeIdentifier(`${physical}_owner`)}`);
    expect(await connectionLimit(t, db.id)).toBe(DEFAULT_LIMIT);

    // What a credential does today still works: tables in public, schemas, temporary tables,
    // trusted extensions, and what one credential makes the next one uses.
    await session.query('CREATE TABLE notes (body text); INSERT INTO notes VALUES ($$kept$$)');
    await session.query('CREATE SCHEMA reports; CREATE TABLE reports.daily (n int)');
    await session.query('CREATE TEMPORARY TABLE scratch (x int)');
    await session.query('CREATE EXTENSION IF NOT EXISTS pgcrypto');
    await session.query('RESET ROLE; CREATE TABLE made_as_itself (x int)');
    const second = (await t.http.post(`/workspaces/${slug}/databases/${db.name}/credentials`).set(auth).expect(200))
      .body as { id: string; password: string };
    // One session for it: with a limit of 2, the session that made its role (closed as the create
    // answered) still counts until its backend has exited, so wait until only `session` is left.
    await eventually(() => sessionsIn(physical).then((n) => n === 1));
    const next = await connectAs(db.dbHost!, second.id, second.password);
    sessions.push(next);
    await next.query('INSERT INTO reports.daily VALUES (1)');
    const { rows } = await next.query<{ body: string }>('SELECT body FROM notes');
    expect(rows).toEqual([{ body: 'kept' }]);
  });

  it('gives a database built before the holder role (owned by its owner role) to it at the next reconcile pass', async () => {
    const db = await createReadyDatabase(t, auth, slug);
    const { physical_name: physical } = await databaseRow(t, db.id);
    const owner = `${physical}_owner`;
    // As an earlier release left it: the database belongs to its owner role, which alone may connect.
    await onDataPlane(async (admin) => {
      const d = admin.escapeIdentifier(physical);
      await admin.query(`ALTER DATABASE ${d} OWNER TO ${admin.escapeIdentifier(owner)}`);
      await admin.query(`REVOKE ALL ON DATABASE ${d} FROM ${admin.escapeIdentifier(`${prefix}databases`)}`);
    });
    expect(await databaseOwner(physical)).toBe(owner);

    await reconcile(t.app);
    expect(await databaseOwner(physical)).toBe(`${prefix}databases`);
    const { id, password } = (
      await t.http.post(`/workspaces/${slug}/databases/${db.name}/credentials`).set(auth).expect(200)
    ).body as { id: string; password: string };
    const session = await connectAs(db.dbHost!, id, password);
    sessions.push(session);
    await expect(
      session.query(`ALTER DATABASE ${session.escapeIdentifier(physical)} CONNECTION LIMIT -1`),
    ).rejects.toMatchObject({ code: INSUFFICIENT_PRIVILEGE });
    await session.query('CREATE SCHEMA kept; CREATE TABLE kept.rows (n int); CREATE TEMPORARY TABLE scratch (x int)');
  });
});
