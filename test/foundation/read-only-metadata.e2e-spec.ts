import { createDeveloperWithToken, createIsolatedTestApp, eventually, TestApp } from '../support/test-app';
import { withAdmin } from '../support/own-database';

/**
 * The metadata PostgreSQL answers but refuses writes: a failover that left DATABASE_URL on a standby,
 * or a database set read-only. Reads work; every write would fail.
 */
describe('a metadata database that answers but refuses writes', () => {
  let t: TestApp & { metadataUrl: string };
  const name = () => new URL(t.metadataUrl).pathname.slice(1);
  /** Sets the database's default and ends its sessions, so every pool reconnects under it. */
  const readOnly = (on: boolean) =>
    withAdmin(async (admin) => {
      const db = admin.escapeIdentifier(name());
      await admin.query(
        on ? `ALTER DATABASE ${db} SET default_transaction_read_only = on` : `ALTER DATABASE ${db} RESET ALL`,
      );
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name()]);
    });

  beforeAll(async () => {
    t = await createIsolatedTestApp();
  });
  afterAll(async () => {
    await readOnly(false).catch(() => undefined);
    await t?.close();
  });

  it('is not ready (503 naming it), and a write is 503 with Retry-After, not a 500; both recover once it takes writes', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    await readOnly(true);
    await eventually(async () => (await t.http.get('/health/ready')).status === 503, 10000);
    const ready = await t.http.get('/health/ready');
    expect(ready.body).toEqual({
      errorCode: 'server_error',
      message: 'Not ready: postgres refusing writes',
      statusCode: 503,
    });
    expect(ready.headers['retry-after']).toBe('5');
    // Reads still work.
    await t.http.get('/workspaces').set(auth).expect(200);
    const write = await t.http.post('/workspaces').set(auth).send({ name: 'Read only' });
    expect(write.status).toBe(503);
    expect(write.body).toMatchObject({ errorCode: 'server_error', statusCode: 503 });
    expect(write.headers['retry-after']).toBe('5');
    expect(await t.dataSource.query("SELECT 1 FROM workspaces WHERE name = 'Read only'")).toEqual([]);

    await readOnly(false);
    await eventually(async () => (await t.http.get('/health/ready')).status === 200, 10000);
    await t.http.post('/workspaces').set(auth).send({ name: 'Writable again' }).expect(201);
  }, 60000);
});
