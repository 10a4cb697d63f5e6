import { Client } from 'pg';
import { createDeveloperWithToken, createIsolatedTestApp, eventually, reconcile, TestApp } from '../support/test-app';
import { Auth, createWorkspace, databaseRow, onDataPlane, unique, waitForStatus } from '../databases/support';
import { connectionLimit, InstanceBody, waitForInstance } from './support';

/** Kept tiny: the data-plane cluster is shared with other runs, so this spec never opens many sessions. */
const DEFAULT_LIMIT = 2;
const TOO_MANY_CONNECTIONS = '53300';

interface Provisioned {
  database: { id: string; name: string; dbHost: string };
  user: string;
  password: string;
  connectionString: string;
}

/** A session as the customer opens it; the caller ends it. Rejects with PostgreSQL's error when refused. */
async function connect(connectionString: string): Promise<Client> {
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

  const setLimitByHand = (physical: string, limit: number) =>
    onDataPlane((db) => db.query(`ALTER DATABASE ${db.escapeIdentifier(physical)} CONNECTION LIMIT ${limit}`));

  it('an anonymous instant database accepts the default number of sessions and refuses the next one (53300)', async () => {
    const res = await t.http.post('/databases/provision').send({ region: 'AWS_US_WEST_2' }).expect(201);
    const p = res.body as Provisioned;
    expect(await connectionLimit(t, p.database.id)).toBe(DEFAULT_LIMIT);
    for (let i = 0; i < DEFAULT_LIMIT; i += 1) sessions.push(await connect(p.connectionString));
    await expect(connect(p.connectionString)).rejects.toMatchObject({ code: TOO_MANY_CONNECTIONS });
    // A session ending makes room again.
    await sessions.pop()!.end();
    sessions.push(await connect(p.connectionString));
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
});
