import { Logger } from '@nestjs/common';
import { DataPlane } from '../../src/data-plane/data-plane.service';
import { TelemetrySampler } from '../../src/insights/telemetry-sampler.service';
import { createDeveloperWithToken, createIsolatedTestApp, eventually, TestApp } from '../support/test-app';
import {
  Auth,
  backdate,
  createReadyDatabase,
  createWorkspace,
  databaseRow,
  LONG_AGO,
  onDataPlane,
  physicalDatabaseExists,
  roleExists,
  connectAs,
  queryAs,
  nonSuperuserAdmin,
  unique,
} from './support';

/**
 * README: the data-plane admin role must be a superuser, or have CREATEDB and CREATEROLE. Such an
 * admin must be a member of a database's owner role to create a database owned by it; the build
 * grants that membership itself (the server decides, in the statement group that makes the role).
 */
describe('a data-plane server whose admin role has CREATEDB and CREATEROLE but is no superuser', () => {
  let admin: string;
  let dropAdmin: () => Promise<void>;
  let t: TestApp & { metadataUrl: string };
  let auth: Auth;
  let slug: string;

  beforeAll(async () => {
    const made = await nonSuperuserAdmin();
    ({ role: admin, drop: dropAdmin } = made);
    t = await createIsolatedTestApp({
      DATABASE_POOL_TARGET: '0',
      DATABASE_DELETION_GRACE_SECONDS: '1',
      DATA_PLANE_URL: made.url,
    });
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
  }, 120000);

  afterAll(async () => {
    await t?.close();
    await dropAdmin?.();
  });

  it('builds a READY, hardened database held by the holder role, the admin a member of that role', async () => {
    const body = await createReadyDatabase(t, auth, slug);
    const { physical_name: physical } = await databaseRow(t, body.id);
    expect(await physicalDatabaseExists(physical)).toBe(true);
    const [state] = await onDataPlane((db) =>
      db
        .query<{ owner: string; public_connect: boolean; admin_is_member: boolean }>(
          `SELECT pg_get_userbyid(d.datdba) AS owner,
                  has_database_privilege('public', d.oid, 'CONNECT') AS public_connect,
                  pg_has_role($2, pg_get_userbyid(d.datdba), 'MEMBER') AS admin_is_member
             FROM pg_database d WHERE d.datname = $1`,
          [physical, admin],
        )
        .then((r) => r.rows),
    );
    expect(state).toEqual({
      owner: `${process.env.DATA_PLANE_NAME_PREFIX}databases`,
      public_connect: false,
      admin_is_member: true,
    });
    expect(
      await onDataPlane((db) =>
        db.query('SELECT pg_has_role($1, $2, $3) AS m', [admin, `${physical}_owner`, 'MEMBER']),
      ).then((r) => r.rows[0]),
    ).toEqual({ m: true });
  });

  it('makes credentials that log in and create tables in the new database', async () => {
    const db = await createReadyDatabase(t, auth, slug);
    const res = await t.http.post(`/workspaces/${slug}/databases/${db.name}/credentials`).set(auth).expect(200);
    const { id, password } = res.body as { id: string; password: string };
    const session = await connectAs(db.dbHost!, id, password);
    try {
      await session.query('CREATE TABLE orders (item text)');
      const { rows } = await session.query<{ owner: string }>(
        "SELECT tableowner AS owner FROM pg_tables WHERE tablename = 'orders'",
      );
      expect(rows).toEqual([{ owner: `${(await databaseRow(t, db.id)).physical_name}_owner` }]);
    } finally {
      await session.end();
    }
  });

  it('records a database whose customers hold every session of its limit as up: the limit refusing the probe is theirs, not an outage', async () => {
    const db = await createReadyDatabase(t, auth, slug);
    const { physical_name: physical, server_id: serverId } = await databaseRow(t, db.id);
    const res = await t.http.post(`/workspaces/${slug}/databases/${db.name}/credentials`).set(auth).expect(200);
    const { id, password } = res.body as { id: string; password: string };
    await onDataPlane((c) => c.query(`ALTER DATABASE ${c.escapeIdentifier(physical)} CONNECTION LIMIT 2`));
    const sessions = [await connectAs(db.dbHost!, id, password), await connectAs(db.dbHost!, id, password)];
    try {
      await expect(connectAs(db.dbHost!, id, password)).rejects.toThrow(/too many connections for database/);
      const sampler = t.app.get(TelemetrySampler);
      // Created before the moment sampled (an hour ago).
      await backdate(t, [db.id], LONG_AGO);
      const found = (await sampler.serverToSample(serverId!))!;
      const server = { ...found, databases: found.databases.filter((d) => d.id === db.id) };
      const at = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 3_600_000);
      expect(await sampler.sampleServer(server, at)).toMatchObject({ sampled: 1, up: 1, unprobed: 0 });
      expect(
        await t.dataSource.query(
          'SELECT observed_seconds, up_seconds FROM database_telemetry_samples WHERE database_id = $1 AND sampled_at = $2',
          [db.id, at],
        ),
      ).toEqual([{ observed_seconds: 60, up_seconds: 60 }]);
    } finally {
      for (const session of sessions) await session.end();
    }
  });

  it("runs nothing of a tenant's as the admin: a function planted in the database's public schema is not what the admin's statements call", async () => {
    // Another tenant's database, holding data.
    const victim = await createDeveloperWithToken(t.app);
    const victimSlug = (await createWorkspace(t, victim.auth)).slug;
    const victimDb = await createReadyDatabase(t, victim.auth, victimSlug);
    const victimCred = (
      await t.http.post(`/workspaces/${victimSlug}/databases/${victimDb.name}/credentials`).set(victim.auth).expect(200)
    ).body as { id: string; password: string };
    await queryAs(
      victimDb.dbHost!,
      victimCred.id,
      victimCred.password,
      "CREATE TABLE secrets (v text); INSERT INTO secrets VALUES ('theirs')",
    );
    const victimOwner = `${(await databaseRow(t, victimDb.id)).physical_name}_owner`;

    // The attacker's database: its credential acts as the owner of `public`, and plants there a
    // format(text, text), a closer match than pg_catalog's for untyped literals, that would grant it
    // the other tenant's owner role if the admin ever called it.
    const own = await createReadyDatabase(t, auth, slug);
    const cred = (await t.http.post(`/workspaces/${slug}/databases/${own.name}/credentials`).set(auth).expect(200))
      .body as { id: string; password: string };
    await queryAs(
      own.dbHost!,
      cred.id,
      cred.password,
      `CREATE FUNCTION public.format(text, text) RETURNS text LANGUAGE plpgsql AS $f$
         BEGIN
           EXECUTE 'GRANT ' || quote_ident('${victimOwner}') || ' TO ' || quote_ident('${cred.id}');
           RETURN pg_catalog.format($1, $2);
         END $f$`,
    );
    // Making the next credential runs the admin's statements in that database.
    await t.http.post(`/workspaces/${slug}/databases/${own.name}/credentials`).set(auth).expect(200);

    const member = await onDataPlane(
      async (db) =>
        (
          await db.query(
            `SELECT 1 FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid JOIN pg_roles u ON u.oid = m.member
            WHERE r.rolname = $1 AND u.rolname = $2`,
            [victimOwner, cred.id],
          )
        ).rowCount,
    );
    expect(member).toBe(0);
    // Whatever the admin's statements call there, its sessions in a customer database resolve
    // nothing in `public` (a startup setting, after the admin URL's own options).
    const session = t.app
      .get(DataPlane)
      .openSession((await databaseRow(t, own.id)).server_id!, (await databaseRow(t, own.id)).physical_name);
    try {
      const db = await session.client;
      expect((await db.query('SHOW search_path')).rows).toEqual([{ search_path: 'pg_catalog,pg_temp' }]);
      expect((await db.query('SHOW work_mem')).rows).toEqual([{ work_mem: '7MB' }]);
    } finally {
      session.close();
    }
    await expect(
      queryAs(victimDb.dbHost!, cred.id, cred.password, `SET ROLE "${victimOwner}"; SELECT v FROM secrets`),
    ).rejects.toThrow(/permission denied/);
  });

  it('revokes a credential (its role and what it owned go) and finalizes a deleted database with all its roles', async () => {
    const db = await createReadyDatabase(t, auth, slug);
    const { physical_name: physical } = await databaseRow(t, db.id);
    const credentials = `/workspaces/${slug}/databases/${db.name}/credentials`;
    const made = async () =>
      (await t.http.post(credentials).set(auth).expect(200)).body as { id: string; password: string };
    const [revoked, kept] = [await made(), await made()];
    // A session of the credential to revoke is open, and it made a table after RESET ROLE (its own).
    const session = await connectAs(db.dbHost!, revoked.id, revoked.password);
    await session.query('RESET ROLE; CREATE TABLE made_by_revoked (x int)');
    await t.http.delete(`${credentials}/${revoked.id}`).set(auth).expect(204);
    expect(await roleExists(revoked.id)).toBe(false);
    await session.end().catch(() => undefined);
    const owner = await connectAs(db.dbHost!, kept.id, kept.password);
    try {
      const { rows } = await owner.query<{ tableowner: string }>(
        "SELECT tableowner FROM pg_tables WHERE tablename = 'made_by_revoked'",
      );
      expect(rows).toEqual([{ tableowner: `${physical}_owner` }]);
    } finally {
      await owner.end();
    }

    await t.http.delete(`/workspaces/${slug}/databases/${db.name}`).set(auth).expect(200);
    await eventually(async () => (await databaseRow(t, db.id)).finalized !== null, 30000);
    expect(await physicalDatabaseExists(physical)).toBe(false);
    expect(await roleExists(kept.id)).toBe(false);
    expect(await roleExists(`${physical}_owner`)).toBe(false);
  });
});

/**
 * README: by default PUBLIC's CONNECT on the server's shared databases is revoked. An admin that is
 * no superuser and does not own them may not revoke it (PostgreSQL only warns), so the operator is
 * told, naming them, instead of the service counting them as closed.
 */
describe('shared databases a non-superuser admin may not close to PUBLIC', () => {
  const shared = `${process.env.DATA_PLANE_NAME_PREFIX}shared_${unique()}`;
  let dropAdmin: () => Promise<void>;
  let t: TestApp | undefined;

  beforeAll(async () => {
    await onDataPlane((db) => db.query(`CREATE DATABASE ${db.escapeIdentifier(shared)}`));
    const admin = await nonSuperuserAdmin();
    dropAdmin = admin.drop;
    // Its admin URL names a database of the operator's, open to PUBLIC (as a fresh one is).
    const url = new URL(admin.url);
    url.pathname = `/${shared}`;
    t = await createIsolatedTestApp({ DATABASE_POOL_TARGET: '0', DATA_PLANE_URL: url.toString() });
  }, 120000);

  afterAll(async () => {
    await t?.close();
    await dropAdmin?.();
    await onDataPlane((db) => db.query(`DROP DATABASE IF EXISTS ${db.escapeIdentifier(shared)} WITH (FORCE)`));
  });

  it('warns the operator, naming them, and builds databases as usual', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn');
    try {
      const auth = (await createDeveloperWithToken(t!.app)).auth;
      const { slug } = await createWorkspace(t!, auth);
      await createReadyDatabase(t!, auth, slug);
      const warned = warn.mock.calls.filter(([entry]) => JSON.stringify(entry).includes(shared));
      expect(warned).toHaveLength(1);
      expect(warned[0][1]).toMatch(/stay open to PUBLIC.*REVOKE CONNECT, TEMPORARY/);
    } finally {
      warn.mockRestore();
    }
    const open = await onDataPlane((db) =>
      db.query("SELECT has_database_privilege('public', oid, 'CONNECT') AS open FROM pg_database WHERE datname = $1", [
        shared,
      ]),
    );
    expect(open.rows).toEqual([{ open: true }]);
  });
});
