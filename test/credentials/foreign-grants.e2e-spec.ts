import { createDeveloperWithToken, createIsolatedTestApp, eventually, reconcile, TestApp } from '../support/test-app';
import {
  Auth,
  connectAs,
  createReadyDatabase,
  createWorkspace,
  DatabaseBody,
  databaseRow,
  nonSuperuserAdmin,
  physicalDatabaseExists,
  queryAs,
  roleExists,
} from '../databases/support';

interface Issued {
  id: string;
  password: string;
}

/**
 * Every role of a data-plane server is visible to every session on it (`pg_roles`), so a tenant can
 * grant privileges on its own objects to another database's roles. PostgreSQL then refuses to drop
 * those roles ("some objects depend on it") until the grants are gone: the drops release them in
 * every database that holds some, so no tenant can keep another's credential or database alive.
 */
describe.each([
  ['a superuser', false],
  ['an admin with CREATEDB and CREATEROLE, no superuser', true],
])("a tenant's grants to another database's roles, the service's admin %s", (_, limitedAdmin) => {
  let t: TestApp;
  let auth: Auth;
  let slug: string;
  let dropAdmin: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const admin = limitedAdmin ? await nonSuperuserAdmin() : undefined;
    dropAdmin = admin?.drop;
    t = await createIsolatedTestApp({
      DATABASE_POOL_TARGET: '0',
      DATABASE_DELETION_GRACE_SECONDS: '1',
      ...(admin && { DATA_PLANE_URL: admin.url }),
    });
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
  }, 120000);
  afterAll(async () => {
    await t?.close();
    await dropAdmin?.();
  });

  const issue = async (db: DatabaseBody): Promise<Issued> =>
    (await t.http.post(`/workspaces/${slug}/databases/${db.name}/credentials`).set(auth).expect(200)).body as Issued;

  /** From a credential of `attacker`'s database: a table of its own, readable by `grantees`. */
  async function grantFrom(attacker: DatabaseBody, credential: Issued, grantees: string[]): Promise<void> {
    const c = await connectAs(attacker.dbHost!, credential.id, credential.password);
    try {
      await c.query('CREATE TABLE bait (x int)');
      await c.query('INSERT INTO bait VALUES (1)');
      for (const grantee of grantees) await c.query(`GRANT SELECT ON bait TO ${c.escapeIdentifier(grantee)}`);
    } finally {
      await c.end();
    }
  }

  it('do not keep a deleted credential from being dropped (and the granting tenant keeps its table)', async () => {
    const victim = await createReadyDatabase(t, auth, slug);
    const attacker = await createReadyDatabase(t, auth, slug);
    const v = await issue(victim);
    const a = await issue(attacker);
    await grantFrom(attacker, a, [v.id]);

    await t.http.delete(`/workspaces/${slug}/databases/${victim.name}/credentials/${v.id}`).set(auth).expect(204);

    expect(await roleExists(v.id)).toBe(false);
    const [row] = await t.dataSource.query<{ dropped: Date | null }[]>(
      'SELECT dropped FROM credentials WHERE id = $1',
      [v.id],
    );
    expect(row.dropped).not.toBeNull();
    expect(await queryAs(attacker.dbHost!, a.id, a.password, 'SELECT x FROM bait')).toEqual([{ x: 1 }]);
  }, 120000);

  it("do not keep a deleted database's owner and credential roles from being dropped at its finalization", async () => {
    const victim = await createReadyDatabase(t, auth, slug);
    const attacker = await createReadyDatabase(t, auth, slug);
    const physical = (await databaseRow(t, victim.id)).physical_name;
    const v = await issue(victim);
    const a = await issue(attacker);
    await grantFrom(attacker, a, [v.id, `${physical}_owner`]);

    await t.http.delete(`/workspaces/${slug}/databases/${victim.name}`).set(auth).expect(200);
    await eventually(async () => {
      await reconcile(t.app);
      return (await databaseRow(t, victim.id)).finalized;
    });

    expect(await physicalDatabaseExists(physical)).toBe(false);
    expect(await roleExists(`${physical}_owner`)).toBe(false);
    expect(await roleExists(v.id)).toBe(false);
    expect(await queryAs(attacker.dbHost!, a.id, a.password, 'SELECT x FROM bait')).toEqual([{ x: 1 }]);
  }, 120000);
});
