import type { DatabaseRow } from '../../src/databases/database-rows';
import { provisionJobId } from '../../src/databases/database-jobs';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { createIsolatedTestApp, eventually, TestApp } from '../support/test-app';

export type Auth = { Authorization: string };

export const unique = () => randomBytes(4).toString('hex');

/**
 * An app with no warm pool and a long deletion grace period whose EU region is unreachable: EU
 * databases never get built and stay REQUESTED, which the "not ready yet" cases need. Its fleet
 * differs from everyone else's, so it runs on a metadata database of its own.
 */
export function createAppWithUnbuildableEuRegion(): Promise<TestApp> {
  const unreachable = new URL(process.env.DATA_PLANE_URL!);
  unreachable.password = 'not-the-password';
  return createIsolatedTestApp({
    DATABASE_POOL_TARGET: '0',
    DATABASE_DELETION_GRACE_SECONDS: '3600',
    DATA_PLANE_URL_AWS_EU_CENTRAL_1: unreachable.toString(),
  });
}

/** The id of the region's first data-plane server (the one registered from DATA_PLANE_URL[_<REGION>]). */
export async function serverIdOf(t: TestApp, region = 'AWS_US_WEST_2'): Promise<string> {
  const [row] = await t.dataSource.query<{ id: string }[]>(
    'SELECT id FROM data_plane_servers WHERE region = $1 ORDER BY created, id LIMIT 1',
    [region],
  );
  if (!row) throw new Error(`no data-plane server in ${region}`);
  return row.id;
}

/** A workspace created through the API by `auth` (who becomes its member). */
export async function createWorkspace(t: TestApp, auth: Auth): Promise<{ id: string; slug: string; name: string }> {
  const res = await t.http
    .post('/workspaces')
    .set(auth)
    .send({ name: `Databases ${unique()}` })
    .expect(201);
  return res.body;
}

/** Creates a database and waits until the lifecycle job has made it READY; returns its representation. */
export async function createReadyDatabase(
  t: TestApp,
  auth: Auth,
  slug: string,
  name = `db_${unique()}`,
  region = 'AWS_US_WEST_2',
): Promise<DatabaseBody> {
  await t.http.post(`/workspaces/${slug}/databases`).set(auth).send({ databaseName: name, region }).expect(201);
  return waitForStatus(t, auth, slug, name, 'READY');
}

export async function waitForStatus(
  t: TestApp,
  auth: Auth,
  slug: string,
  name: string,
  status: string,
): Promise<DatabaseBody> {
  return eventually(async () => {
    const res = await t.http.get(`/workspaces/${slug}/databases/${name}`).set(auth).expect(200);
    return res.body.status === status ? (res.body as DatabaseBody) : null;
  });
}

export interface DatabaseBody {
  id: string;
  name: string;
  status: string;
  region: string;
  dbHost?: string;
  apiHost: string;
  deleted?: string;
  workspace: { id: string; slug: string };
}

/** The metadata row of a database (what the service recorded). */
export async function databaseRow(t: TestApp, id: string) {
  const [row] = await t.dataSource.query('SELECT * FROM databases WHERE id = $1', [id]);
  return row as DatabaseRow;
}

/**
 * Records the databases as created at `created`: for specs that sample or bill moments in the past,
 * which nothing observes of a database before its creation.
 */
export async function backdate(t: TestApp, ids: string[], created: Date): Promise<void> {
  await t.dataSource.query('UPDATE databases SET created = $2 WHERE id = ANY($1)', [ids, created]);
}

/** Long enough ago for any moment a spec samples or bills (weeks: the start of last month included). */
export const LONG_AGO = new Date(Date.now() - 70 * 24 * 3_600_000);

/** Runs `work` with an admin connection to the data-plane server (to check what really exists there). */
export async function onDataPlane<T>(work: (db: Client) => Promise<T>, database = 'postgres'): Promise<T> {
  const url = new URL(process.env.DATA_PLANE_URL!);
  url.pathname = `/${database}`;
  const db = new Client({ connectionString: url.toString() });
  await db.connect();
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

/**
 * Ends the data-plane session holding the advisory lock named `key` (DataPlane.exclusively's): a
 * lock session the server dropped, as a restart of it or a network cut does, while its run goes on.
 */
export async function loseLockSession(key: string): Promise<void> {
  await onDataPlane((db) =>
    db.query(
      `SELECT pg_terminate_backend(l.pid) FROM pg_locks l
        WHERE l.locktype = 'advisory' AND l.granted
          AND ((l.classid::int8 << 32) | l.objid::int8) = hashtextextended($1, 0)`,
      [key],
    ),
  );
}

/**
 * Holds the next call of `target[method]` until `release()`, then ends it with `end` (its answer or
 * a throw); `started` resolves once the call is under way. `restore()` puts the method back.
 */
export function gateNextCall<T extends object, K extends keyof T>(
  target: T,
  method: K,
  end: () => unknown,
): { started: Promise<void>; release: () => void; restore: () => void } {
  let called!: () => void;
  const started = new Promise<void>((resolve) => (called = resolve));
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const spy = jest.spyOn(target, method as never).mockImplementationOnce((async () => {
    called();
    await gate;
    return end();
  }) as never);
  return { started, release, restore: () => spy.mockRestore() };
}

export function physicalDatabaseExists(physical: string): Promise<boolean> {
  return onDataPlane(async (db) => {
    const res = await db.query('SELECT 1 FROM pg_database WHERE datname = $1', [physical]);
    return res.rowCount === 1;
  });
}

export function roleExists(role: string): Promise<boolean> {
  return onDataPlane(async (db) => {
    const res = await db.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
    return res.rowCount === 1;
  });
}

/** Physical databases of this test run on the data plane. */
export function runDatabases(): Promise<string[]> {
  const like = `${process.env.DATA_PLANE_NAME_PREFIX!.replace(/_/g, '\\_')}%`;
  return onDataPlane(async (db) => {
    const res = await db.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE datname LIKE $1 ORDER BY 1',
      [like],
    );
    return res.rows.map((r) => r.datname);
  });
}

/** A client logged in as a credential, through the database's dbHost; the caller must end() it. */
export function connectAs(dbHost: string, user: string, password: string): Promise<Client> {
  const url = new URL(dbHost);
  url.username = encodeURIComponent(user);
  url.password = encodeURIComponent(password);
  return connectWith(url.toString());
}

/** A session as a customer opens it with a connection string; the caller must end() it. Rejects with PostgreSQL's error when refused. */
export async function connectWith(connectionString: string): Promise<Client> {
  const client = new Client({ connectionString, connectionTimeoutMillis: 10000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  return client;
}

/** Logs in, runs one query and logs out: resolves to the rows, rejects when the login or query is refused. */
export async function queryAs<R extends object = Record<string, unknown>>(
  dbHost: string,
  user: string,
  password: string,
  sql: string,
): Promise<R[]> {
  const client = await connectAs(dbHost, user, password);
  try {
    return (await client.query<R>(sql)).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * A data-plane admin role with CREATEDB and CREATEROLE but no superuser (README: enough for the
 * service), and the admin URL that logs in as it (with a startup option of the operator's own);
 * `drop` removes it when the spec is done (whatever the spec made goes with the run's teardown).
 */
export async function nonSuperuserAdmin(): Promise<{ role: string; url: string; drop: () => Promise<void> }> {
  const role = `${process.env.DATA_PLANE_NAME_PREFIX}admin_${unique()}`;
  const password = randomBytes(16).toString('hex');
  await onDataPlane(async (db) => {
    const a = db.escapeIdentifier(role);
    await db.query(`CREATE ROLE ${a} LOGIN CREATEDB CREATEROLE PASSWORD ${db.escapeLiteral(password)}`);
    // Superuser admins of this cluster (other specs) closed its shared databases to PUBLIC.
    await db.query(`GRANT CONNECT ON DATABASE postgres TO ${a}`);
  });
  const url = new URL(process.env.DATA_PLANE_URL!);
  url.username = role;
  url.password = password;
  url.searchParams.set('options', '-c work_mem=7MB');
  const drop = () =>
    onDataPlane(async (db) => {
      const a = db.escapeIdentifier(role);
      await db.query(`REVOKE CONNECT ON DATABASE postgres FROM ${a}`);
      await db.query(`REASSIGN OWNED BY ${a} TO CURRENT_USER`);
      await db.query(`DROP OWNED BY ${a}`);
      await db.query(`DROP ROLE ${a}`);
    }).catch(() => undefined);
  return { role, url: url.toString(), drop };
}

/**
 * Creates a database whose build job is lost (as with Redis flushed after the create): the process's
 * queue takes no job meanwhile, and the create's job is removed before it could run. Its id.
 */
export async function createWithLostBuild(
  t: TestApp,
  auth: Auth,
  slug: string,
  name: string,
  region = 'AWS_US_WEST_2',
) {
  const queue = t.app.get(JobDispatcher).queue('database-lifecycle');
  await queue.pause(true);
  try {
    const res = await t.http.post(`/workspaces/${slug}/databases`).set(auth).send({ databaseName: name, region });
    expect(res.status).toBe(201);
    const id = (res.body as { id: string }).id;
    await (await queue.getJob(provisionJobId(id)))?.remove();
    return id;
  } finally {
    await queue.resume(true);
  }
}
