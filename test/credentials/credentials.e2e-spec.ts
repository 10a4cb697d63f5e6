import { randomUUID } from 'node:crypto';
import { SecretBox } from '../../src/common/crypto/secret-box';
import { CredentialsRepository } from '../../src/credentials/credentials.repository';
import { CredentialsService } from '../../src/credentials/credentials.service';
import { DataPlane, DataPlaneError } from '../../src/data-plane/data-plane.service';
import { scramSha256Verifier } from '../../src/data-plane/scram';
import { DatabaseLifecycle } from '../../src/databases/database-lifecycle.service';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { createDeveloperWithToken, eventually, reconcile, TestApp } from '../support/test-app';
import {
  Auth,
  DatabaseBody,
  connectAs,
  createAppWithUnbuildableEuRegion,
  createReadyDatabase,
  createWorkspace,
  databaseRow,
  onDataPlane,
  queryAs,
  roleExists,
  serverIdOf,
  unique,
} from '../databases/support';

interface Issued {
  id: string;
  password: string;
}

describe('database credentials (real logins on the password-checking data plane)', () => {
  let t: TestApp;
  let auth: Auth;
  let slug: string;
  beforeAll(async () => {
    t = await createAppWithUnbuildableEuRegion();
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
  });
  afterAll(() => t.close());

  const credentialsPath = (db: { name: string }, ws = slug) => `/workspaces/${ws}/databases/${db.name}/credentials`;

  async function issue(db: { name: string }, ws = slug): Promise<Issued> {
    const res = await t.http.post(credentialsPath(db, ws)).set(auth).expect(200);
    return res.body as Issued;
  }

  async function rotate(db: { name: string }, hours: number, reason = 'test rotation'): Promise<Issued> {
    const res = await t.http
      .post(`${credentialsPath(db)}/rotate`)
      .set(auth)
      .send({ delayOldSecretsExpirationHours: hours, reason })
      .expect(200);
    return res.body as Issued;
  }

  const credentialRow = async (id: string) =>
    (await t.dataSource.query('SELECT * FROM credentials WHERE id = $1', [id]))[0] as {
      password_ciphertext: string;
      expires_at: Date | null;
      dropped: Date | null;
      expired_by_rotation_id: string | null;
    };

  describe('create and use', () => {
    let db: DatabaseBody;
    beforeAll(async () => {
      db = await createReadyDatabase(t, auth, slug);
    });

    it('returns the password once, and logs in to dbHost with user = id; a second credential reads what the first made', async () => {
      const res = await t.http.post(credentialsPath(db)).set(auth).expect(200);
      expect(res.body).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        database: expect.objectContaining({ id: db.id, name: db.name, status: 'READY', dbHost: db.dbHost }),
        internal: false,
        password: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        created: expect.any(String),
      });
      const first = res.body as Issued;
      const client = await connectAs(db.dbHost!, first.id, first.password);
      try {
        await client.query('CREATE TABLE orders (id int PRIMARY KEY, item text)');
        await client.query("INSERT INTO orders VALUES (1, 'book')");
        const who = await client.query('SELECT session_user, current_user, current_database()');
        expect(who.rows[0]).toEqual({
          session_user: first.id,
          current_user: expect.stringMatching(/_owner$/),
          current_database: (await databaseRow(t, db.id)).physical_name,
        });
      } finally {
        await client.end();
      }
      const second = await issue(db);
      expect(second.id).not.toBe(first.id);
      expect(second.password).not.toBe(first.password);
      await expect(queryAs(db.dbHost!, second.id, second.password, 'SELECT item FROM orders')).resolves.toEqual([
        { item: 'book' },
      ]);
    });

    it('creates a role with no special powers that acts as the database owner role', async () => {
      const cred = await issue(db);
      const physical = (await databaseRow(t, db.id)).physical_name;
      const role = await onDataPlane(async (c) => {
        const { rows } = await c.query(
          `SELECT rolcanlogin, rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls, rolinherit,
                  pg_has_role(rolname, $2, 'MEMBER') AS member_of_owner
             FROM pg_roles WHERE rolname = $1`,
          [cred.id, `${physical}_owner`],
        );
        return rows[0];
      });
      expect(role).toEqual({
        rolcanlogin: true,
        rolsuper: false,
        rolcreatedb: false,
        rolcreaterole: false,
        rolreplication: false,
        rolbypassrls: false,
        rolinherit: true,
        member_of_owner: true,
      });
    });

    it("making a credential's role again (a retry after a lost answer) sets the new verifier: the new password logs in, the old one no longer does", async () => {
      const cred = await issue(db);
      const physical = (await databaseRow(t, db.id)).physical_name;
      const dataPlane = t.app.get(DataPlane);
      const server = await serverIdOf(t, 'AWS_US_WEST_2');
      const password = `retry-${randomUUID()}`;
      await dataPlane.createLoginRole(
        dataPlane.openSession(server, physical),
        cred.id,
        await scramSha256Verifier(password),
      );
      await expect(queryAs(db.dbHost!, cred.id, password, 'SELECT current_user AS u')).resolves.toEqual([
        { u: `${physical}_owner` },
      ]);
      await expect(queryAs(db.dbHost!, cred.id, cred.password, 'SELECT 1')).rejects.toThrow(/password authentication/);
    });

    it('stores the password only sealed with a key id, and never lists it', async () => {
      const cred = await issue(db);
      const row = await credentialRow(cred.id);
      expect(row.password_ciphertext).not.toContain(cred.password);
      expect(row.password_ciphertext).toMatch(/^[^:]+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
      expect(t.app.get(SecretBox).open(row.password_ciphertext)).toBe(cred.password);

      const list = await t.http.get(credentialsPath(db)).set(auth).expect(200);
      const item = list.body.find((c: { id: string }) => c.id === cred.id);
      expect(item).toEqual({
        id: cred.id,
        database: {
          id: db.id,
          name: db.name,
          workspace: expect.objectContaining({ id: db.workspace.id, slug }),
          status: 'READY',
          regionId: 1,
          created: expect.any(String),
        },
        internal: false,
        created: expect.any(String),
      });
      const text = JSON.stringify(list.body);
      expect(text).not.toContain('password');
      expect(text).not.toContain(cred.password);
      expect(text).not.toContain(row.password_ciphertext);
    });

    it("cannot connect to another database of the same or of another workspace, nor to the server's shared ones", async () => {
      const cred = await issue(db);
      const sibling = await createReadyDatabase(t, auth, slug);
      const otherWorkspace = await createWorkspace(t, auth);
      const foreign = await createReadyDatabase(t, auth, otherWorkspace.slug);
      for (const target of [sibling, foreign]) {
        await expect(queryAs(target.dbHost!, cred.id, cred.password, 'SELECT 1')).rejects.toThrow(
          /permission denied for database/,
        );
      }
      // Nor to the server's shared databases.
      for (const shared of ['postgres', 'template1']) {
        const url = new URL(db.dbHost!);
        url.pathname = `/${shared}`;
        await expect(queryAs(url.toString(), cred.id, cred.password, 'SELECT 1')).rejects.toThrow(
          /permission denied for database/,
        );
      }
      await expect(queryAs(db.dbHost!, cred.id, 'wrong-password', 'SELECT 1')).rejects.toThrow(
        /password authentication failed/,
      );
    });

    it('keeps what a credential owns usable by the others, also after it is deleted', async () => {
      const maker = await issue(db);
      const reader = await issue(db);
      const client = await connectAs(db.dbHost!, maker.id, maker.password);
      try {
        // Acting as itself rather than the owner role: default privileges still cover the others.
        await client.query('RESET ROLE');
        await client.query('CREATE TABLE made_by_maker (v int)');
        await client.query('INSERT INTO made_by_maker VALUES (42)');
      } finally {
        await client.end();
      }
      await expect(queryAs(db.dbHost!, reader.id, reader.password, 'SELECT v FROM made_by_maker')).resolves.toEqual([
        { v: 42 },
      ]);
      await t.http
        .delete(`${credentialsPath(db)}/${maker.id}`)
        .set(auth)
        .expect(204);
      await expect(
        queryAs(
          db.dbHost!,
          reader.id,
          reader.password,
          "SELECT v, pg_get_userbyid(relowner) AS owner FROM made_by_maker, pg_class WHERE relname = 'made_by_maker'",
        ),
      ).resolves.toEqual([{ v: 42, owner: expect.stringMatching(/_owner$/) }]);
    });

    it('drops a role once even when two drops race (the loser finds it gone and is done)', async () => {
      const cred = await issue(db);
      const dataPlane = t.app.get(DataPlane);
      const physical = (await t.dataSource.query('SELECT physical_name FROM databases WHERE id = $1', [db.id]))[0]
        .physical_name as string;
      const server = await serverIdOf(t);
      await expect(
        Promise.all([
          dataPlane.dropLoginRole(server, physical, cred.id),
          dataPlane.dropLoginRole(server, physical, cred.id),
        ]),
      ).resolves.toBeDefined();
      expect(await roleExists(cred.id)).toBe(false);
    });

    it('deletes: 204, the open session is terminated, the role is gone; unknown ids are 404', async () => {
      const cred = await issue(db);
      const session = await connectAs(db.dbHost!, cred.id, cred.password);
      try {
        await session.query('SELECT 1');
        const res = await t.http
          .delete(`${credentialsPath(db)}/${cred.id}`)
          .set(auth)
          .expect(204);
        expect(res.text).toBe('');
        await expect(session.query('SELECT 1')).rejects.toThrow();
      } finally {
        await session.end().catch(() => undefined);
      }
      expect(await roleExists(cred.id)).toBe(false);
      expect((await credentialRow(cred.id)).dropped).not.toBeNull();
      await expect(queryAs(db.dbHost!, cred.id, cred.password, 'SELECT 1')).rejects.toThrow();
      const list = await t.http.get(credentialsPath(db)).set(auth).expect(200);
      expect(list.body.map((c: { id: string }) => c.id)).not.toContain(cred.id);

      const again = await t.http
        .delete(`${credentialsPath(db)}/${cred.id}`)
        .set(auth)
        .expect(404);
      expect(again.body).toEqual({ errorCode: 'entity_not_found', message: expect.any(String), statusCode: 404 });
      await t.http
        .delete(`${credentialsPath(db)}/00000000-0000-4000-8000-000000000000`)
        .set(auth)
        .expect(404);
      await t.http
        .delete(`${credentialsPath(db)}/not-an-id`)
        .set(auth)
        .expect(404);
    });
  });

  describe('refusals', () => {
    it('answers 409 db_status_failure while the database is not READY', async () => {
      const name = `pending_${unique()}`;
      await t.http
        .post(`/workspaces/${slug}/databases`)
        .set(auth)
        .send({ databaseName: name, region: 'AWS_EU_CENTRAL_1' })
        .expect(201);
      const res = await t.http.post(credentialsPath({ name })).set(auth).expect(409);
      expect(res.body).toEqual({
        errorCode: 'db_status_failure',
        message: expect.stringMatching(/not ready yet/),
        statusCode: 409,
      });
      const rotateRes = await t.http
        .post(`${credentialsPath({ name })}/rotate`)
        .set(auth)
        .send({ delayOldSecretsExpirationHours: 0 })
        .expect(409);
      expect(rotateRes.body.errorCode).toBe('db_status_failure');
      expect(
        await t.dataSource.query(
          'SELECT id FROM credentials c WHERE c.database_id IN (SELECT id FROM databases WHERE name = $1)',
          [name],
        ),
      ).toEqual([]);
    });

    it('answers 404 for an unknown database', async () => {
      await t.http
        .post(credentialsPath({ name: 'no_such_db' }))
        .set(auth)
        .expect(404);
      await t.http
        .get(credentialsPath({ name: 'no_such_db' }))
        .set(auth)
        .expect(404);
    });

    it('answers 500 credential_creation_failure when the data plane refuses, leaving no role behind', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const physical = (await databaseRow(t, db.id)).physical_name;
      const members = () =>
        onDataPlane(async (c) => {
          const { rows } = await c.query(
            `SELECT count(*)::int AS n FROM pg_auth_members m JOIN pg_roles o ON o.oid = m.roleid WHERE o.rolname = $1`,
            [`${physical}_owner`],
          );
          return rows[0].n as number;
        });
      const before = await members();
      await onDataPlane((c) => c.query(`ALTER DATABASE ${c.escapeIdentifier(physical)} ALLOW_CONNECTIONS false`));
      try {
        const res = await t.http.post(credentialsPath(db)).set(auth).expect(500);
        expect(res.body).toEqual({
          errorCode: 'credential_creation_failure',
          message: expect.any(String),
          statusCode: 500,
        });
      } finally {
        await onDataPlane((c) => c.query(`ALTER DATABASE ${c.escapeIdentifier(physical)} ALLOW_CONNECTIONS true`));
      }
      expect(await members()).toBe(before);
      // The create's intent (written before the data plane was asked) is abandoned: never listed,
      // it expires at once and the expiry job marks it dropped.
      const [intent] = await t.dataSource.query<{ id: string; pending: boolean; expires_at: Date | null }[]>(
        'SELECT id, pending, expires_at FROM credentials WHERE database_id = $1',
        [db.id],
      );
      expect(intent).toMatchObject({ pending: true, expires_at: expect.any(Date) });
      expect((await t.http.get(credentialsPath(db)).set(auth).expect(200)).body).toEqual([]);
      await eventually(async () => (await credentialRow(intent.id)).dropped !== null);
      expect(await members()).toBe(before);
      await issue(db);
    });

    it.each([[-1], [721], [1.5], ['24'], [null]])('refuses a rotation delay of %j with 400', async (delay) => {
      const db = { name: 'whatever_db' };
      const res = await t.http
        .post(`${credentialsPath(db)}/rotate`)
        .set(auth)
        .send({ delayOldSecretsExpirationHours: delay, reason: 'x' })
        .expect(400);
      expect(res.body.errorCode).toBe('bad_request');
      expect(res.body.message).toMatch(/delayOldSecretsExpirationHours/);
    });

    it('refuses a rotation reason PostgreSQL cannot store (NUL) with 400, before any role is made', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const res = await t.http
        .post(`${credentialsPath(db)}/rotate`)
        .set(auth)
        .send({ delayOldSecretsExpirationHours: 1, reason: 'a\u0000b' })
        .expect(400);
      expect(res.body).toEqual({
        errorCode: 'bad_request',
        message: 'reason must not contain NUL characters',
        statusCode: 400,
      });
      expect(await t.dataSource.query('SELECT id FROM credentials WHERE database_id = $1', [db.id])).toEqual([]);
    });
  });

  describe('rotation', () => {
    it('reads the rotation body as JSON whatever its Content-Type (published as */*)', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      await issue(db);
      const res = await t.http
        .post(`${credentialsPath(db)}/rotate`)
        .set(auth)
        .set('Content-Type', 'text/plain')
        .send(JSON.stringify({ delayOldSecretsExpirationHours: 3, reason: 'sent as text' }));
      expect(res.status).toBe(200);
      const fresh = res.body as Issued;
      await expect(queryAs(db.dbHost!, fresh.id, fresh.password, 'SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
      const [rotation] = await t.dataSource.query('SELECT * FROM credential_rotations WHERE new_credential_id = $1', [
        fresh.id,
      ]);
      expect(rotation).toMatchObject({ database_id: db.id, reason: 'sent as text', delay_hours: 3 });
    });

    it('takes a rotation with no body, or no delay, as a routine one: the earlier credentials keep working for 24 hours', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const old = await issue(db);
      const rotations = [
        await t.http.post(`${credentialsPath(db)}/rotate`).set(auth),
        await t.http
          .post(`${credentialsPath(db)}/rotate`)
          .set(auth)
          .send({ reason: 'no delay named' }),
      ];
      for (const res of rotations) {
        expect(res.status).toBe(200);
        const fresh = res.body as Issued;
        await expect(queryAs(db.dbHost!, fresh.id, fresh.password, 'SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
        const [rotation] = await t.dataSource.query(
          'SELECT delay_hours FROM credential_rotations WHERE new_credential_id = $1',
          [fresh.id],
        );
        expect(rotation).toEqual({ delay_hours: 24 });
      }
      await expect(queryAs(db.dbHost!, old.id, old.password, 'SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
      const expiresAt = new Date((await credentialRow(old.id)).expires_at!).getTime();
      expect(Math.abs(expiresAt - (Date.now() + 24 * 3600 * 1000))).toBeLessThan(60 * 1000);
    });

    it('with delay 0: the old password is refused at once, the new one works, and the old data stays readable', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const old = await issue(db);
      await queryAs(db.dbHost!, old.id, old.password, 'CREATE TABLE kept (v text)');
      await queryAs(db.dbHost!, old.id, old.password, "INSERT INTO kept VALUES ('still here')");

      const fresh = await rotate(db, 0, 'leaked in a log');
      expect(fresh).toMatchObject({ id: expect.any(String), password: expect.any(String), internal: false });
      expect(fresh.id).not.toBe(old.id);
      await expect(queryAs(db.dbHost!, old.id, old.password, 'SELECT 1')).rejects.toThrow(
        /password authentication failed/,
      );
      await expect(queryAs(db.dbHost!, fresh.id, fresh.password, 'SELECT v FROM kept')).resolves.toEqual([
        { v: 'still here' },
      ]);
      const [rotation] = await t.dataSource.query('SELECT * FROM credential_rotations WHERE new_credential_id = $1', [
        fresh.id,
      ]);
      expect(rotation).toMatchObject({ database_id: db.id, reason: 'leaked in a log', delay_hours: 0 });
      expect((await credentialRow(old.id)).expired_by_rotation_id).toBe(rotation.id);

      // The expiry job drops the old role shortly after.
      await eventually(async () => !(await roleExists(old.id)));
      await eventually(async () => (await credentialRow(old.id)).dropped !== null);
      const list = await t.http.get(credentialsPath(db)).set(auth).expect(200);
      expect(list.body.map((c: { id: string }) => c.id)).toEqual([fresh.id]);
    });

    it('answers the new password when the metadata database fails once the rotation is committed; the sweep tells PostgreSQL the old expiry', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const old = await issue(db);
      const spy = jest
        .spyOn(t.app.get(CredentialsRepository), 'findExpiry')
        .mockRejectedValueOnce(new Error('Connection terminated unexpectedly'));
      let fresh: Issued;
      try {
        fresh = await rotate(db, 2);
      } finally {
        spy.mockRestore();
      }
      // Before, this answered 503 and the new password was never seen: with a delay of 0 the
      // caller was left without a working credential until a second rotation.
      await expect(queryAs(db.dbHost!, fresh.id, fresh.password, 'SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
      const expiresAt = new Date((await credentialRow(old.id)).expires_at!);
      const validUntil = () =>
        onDataPlane(async (c) => {
          const { rows } = await c.query('SELECT rolvaliduntil FROM pg_roles WHERE rolname = $1', [old.id]);
          return rows[0].rolvaliduntil as Date | null;
        });
      expect(await validUntil()).toBeNull();
      await reconcile(t.app);
      expect((await validUntil())?.getTime()).toBe(expiresAt.getTime());
    });

    it('with a delay: the old password works until the expiry moment PostgreSQL was told, then the job drops the role; running late or twice is harmless', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const old = await issue(db);
      const fresh = await rotate(db, 2);
      await expect(queryAs(db.dbHost!, old.id, old.password, 'SELECT 1')).resolves.toEqual([{ '?column?': 1 }]);
      await expect(queryAs(db.dbHost!, fresh.id, fresh.password, 'SELECT 1')).resolves.toHaveLength(1);

      const row = await credentialRow(old.id);
      expect(row.expires_at).not.toBeNull();
      const expiresAt = new Date(row.expires_at!);
      expect(Math.abs(expiresAt.getTime() - (Date.now() + 2 * 3600 * 1000))).toBeLessThan(60 * 1000);
      const validUntil = await onDataPlane(async (c) => {
        const { rows } = await c.query('SELECT rolvaliduntil FROM pg_roles WHERE rolname = $1', [old.id]);
        return rows[0].rolvaliduntil as Date;
      });
      expect(validUntil.getTime()).toBe(expiresAt.getTime());
      const list = await t.http.get(credentialsPath(db)).set(auth).expect(200);
      expect(list.body.find((c: { id: string }) => c.id === old.id).expires).toBe(expiresAt.toISOString());
      expect(list.body.find((c: { id: string }) => c.id === fresh.id).expires).toBeUndefined();

      const queue = t.app.get(JobDispatcher).queue('credential-expiry');
      const job = await queue.getJob(`expire:${old.id}:${expiresAt.getTime()}`);
      expect(job).not.toBeNull();
      expect(await job!.isDelayed()).toBe(true);

      // Running the job before its moment (promoted early) changes nothing.
      const service = t.app.get(CredentialsService);
      await expect(service.expire(old.id)).resolves.toBe(false);
      expect(await roleExists(old.id)).toBe(true);

      // Time passes: the moment is now behind us, for PostgreSQL and for the service.
      const past = new Date(Date.now() - 1000);
      await t.dataSource.query('UPDATE credentials SET expires_at = $2 WHERE id = $1', [old.id, past]);
      await onDataPlane((c) =>
        c.query(`ALTER ROLE ${c.escapeIdentifier(old.id)} VALID UNTIL ${c.escapeLiteral(past.toISOString())}`),
      );
      await expect(queryAs(db.dbHost!, old.id, old.password, 'SELECT 1')).rejects.toThrow(
        /password authentication failed/,
      );
      await job!.promote();
      await eventually(async () => (await credentialRow(old.id)).dropped !== null);
      expect(await roleExists(old.id)).toBe(false);
      const dropped = (await credentialRow(old.id)).dropped;

      await expect(service.expire(old.id)).resolves.toBe(false);
      expect((await credentialRow(old.id)).dropped).toEqual(dropped);
      await expect(queryAs(db.dbHost!, fresh.id, fresh.password, 'SELECT 1')).resolves.toHaveLength(1);
    });

    it('the sweep drops an expired credential whose job was lost', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const old = await issue(db);
      await rotate(db, 5);
      const queue = t.app.get(JobDispatcher).queue('credential-expiry');
      const expiresAt = new Date((await credentialRow(old.id)).expires_at!);
      await (await queue.getJob(`expire:${old.id}:${expiresAt.getTime()}`))!.remove();

      await reconcile(t.app);
      expect(await roleExists(old.id)).toBe(true);
      // The sweep re-enqueued the lost job for the moment still ahead.
      expect(await queue.getJob(`expire:${old.id}:${expiresAt.getTime()}`)).not.toBeNull();
      await (await queue.getJob(`expire:${old.id}:${expiresAt.getTime()}`))!.remove();

      await t.dataSource.query("UPDATE credentials SET expires_at = now() - interval '1 second' WHERE id = $1", [
        old.id,
      ]);
      await reconcile(t.app);
      expect(await roleExists(old.id)).toBe(false);
      expect((await credentialRow(old.id)).dropped).not.toBeNull();
    });

    it("the sweep rewrites a waiting role's VALID UNTIL only when it is not the recorded expiry: a pass otherwise writes nothing on the server", async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const old = await issue(db);
      await rotate(db, 5);
      const expiresAt = new Date((await credentialRow(old.id)).expires_at!);
      // The role's catalog row: every ALTER ROLE writes a new version of it (a new xmin).
      const catalogRow = () =>
        onDataPlane(async (c) => {
          const { rows } = await c.query(
            'SELECT xmin::text AS version, rolvaliduntil IS NOT DISTINCT FROM $2::timestamptz AS "onTime" FROM pg_authid WHERE rolname = $1',
            [old.id, expiresAt.toISOString()],
          );
          return rows[0] as { version: string; onTime: boolean };
        });
      const applied = await catalogRow();
      expect(applied.onTime).toBe(true);
      await reconcile(t.app);
      await reconcile(t.app);
      expect(await catalogRow()).toEqual(applied);

      // The rotation's VALID UNTIL never reached the server (it did not answer, or a crash came first):
      // the next pass puts the recorded moment there, once.
      await onDataPlane((c) => c.query(`ALTER ROLE ${c.escapeIdentifier(old.id)} VALID UNTIL 'infinity'`));
      await reconcile(t.app);
      const repaired = await catalogRow();
      expect(repaired.onTime).toBe(true);
      await reconcile(t.app);
      expect(await catalogRow()).toEqual(repaired);
      // Its job is re-enqueued every pass all the same (a lost one comes back; duplicates collapse).
      const queue = t.app.get(JobDispatcher).queue('credential-expiry');
      expect(await queue.getJob(`expire:${old.id}:${expiresAt.getTime()}`)).not.toBeNull();
    });

    it('a later rotation expires the credential an earlier one created, never its own', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const original = await issue(db);
      const first = await rotate(db, 24);
      const second = await rotate(db, 0);
      await expect(queryAs(db.dbHost!, second.id, second.password, 'SELECT 1')).resolves.toHaveLength(1);
      await expect(queryAs(db.dbHost!, first.id, first.password, 'SELECT 1')).rejects.toThrow(
        /password authentication failed/,
      );
      await expect(queryAs(db.dbHost!, original.id, original.password, 'SELECT 1')).rejects.toThrow(
        /password authentication failed/,
      );
      // The earlier expiry wins for the original credential (24h from the first, now from the second).
      const originalRow = await credentialRow(original.id);
      expect(new Date(originalRow.expires_at!).getTime()).toBeLessThanOrEqual(Date.now());
      expect((await credentialRow(second.id)).expires_at).toBeNull();
    });

    it("overlapping concurrent rotations leave exactly the later one's credential working", async () => {
      const db = await createReadyDatabase(t, auth, slug);
      await issue(db);
      const [a, b] = await Promise.all([rotate(db, 0, 'a'), rotate(db, 0, 'b')]);
      const rows = await t.dataSource.query<
        { id: string; expires_at: Date | null; expired_by_rotation_id: string | null }[]
      >('SELECT id, expires_at, expired_by_rotation_id FROM credentials WHERE id = ANY($1)', [[a.id, b.id]]);
      const survivors = rows.filter((r) => r.expires_at === null);
      expect(survivors).toHaveLength(1);
      const later = survivors[0].id === a.id ? a : b;
      const earlier = later === a ? b : a;
      const expired = rows.find((r) => r.id === earlier.id)!;
      const [rotation] = await t.dataSource.query('SELECT new_credential_id FROM credential_rotations WHERE id = $1', [
        expired.expired_by_rotation_id,
      ]);
      expect(rotation.new_credential_id).toBe(later.id);
      await expect(queryAs(db.dbHost!, later.id, later.password, 'SELECT 1')).resolves.toHaveLength(1);
      await expect(queryAs(db.dbHost!, earlier.id, earlier.password, 'SELECT 1')).rejects.toThrow();
    });
  });

  describe('rotation racing another', () => {
    it('an earlier rotation finishing late never puts back its later VALID UNTIL: PostgreSQL refuses the old password on time with no job running', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const original = await issue(db);
      // No expiry job runs here: PostgreSQL alone must refuse the password at the recorded moment.
      const queue = t.app.get(JobDispatcher).queue('credential-expiry');
      await queue.pause(true);
      const dataPlane = t.app.get(DataPlane);
      const expireLoginRole = dataPlane.expireLoginRole.bind(dataPlane);
      let reached!: () => void;
      const atGate = new Promise<void>((resolve) => (reached = resolve));
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      // The first rotation (24 h) is held just before it tells PostgreSQL its moment...
      const spy = jest.spyOn(dataPlane, 'expireLoginRole').mockImplementation(async (server, role, at) => {
        if (role === original.id && at.getTime() > Date.now() + 3600 * 1000) {
          reached();
          await gate;
        }
        return expireLoginRole(server, role, at);
      });
      try {
        const first = rotate(db, 24, 'first');
        await atGate;
        // ...while a second rotation expires every earlier credential at once.
        const second = rotate(db, 0, 'second');
        await Promise.race([second, new Promise((resolve) => setTimeout(resolve, 1000))]);
        open();
        const [, latest] = await Promise.all([first, second]);

        const row = await credentialRow(original.id);
        expect(new Date(row.expires_at!).getTime()).toBeLessThanOrEqual(Date.now());
        const validUntil = await onDataPlane(async (c) => {
          const { rows } = await c.query('SELECT rolvaliduntil FROM pg_roles WHERE rolname = $1', [original.id]);
          return rows[0]?.rolvaliduntil as Date | undefined;
        });
        expect(validUntil?.getTime()).toBe(new Date(row.expires_at!).getTime());
        await expect(queryAs(db.dbHost!, original.id, original.password, 'SELECT 1')).rejects.toThrow(
          /password authentication failed/,
        );
        await expect(queryAs(db.dbHost!, latest.id, latest.password, 'SELECT 1')).resolves.toHaveLength(1);
      } finally {
        open();
        spy.mockRestore();
        await queue.resume(true);
      }
    });
  });

  describe('orphan roles (a credential-looking member of an owner role that no credential accounts for)', () => {
    const members = (owner: string) =>
      onDataPlane(async (c) => {
        const { rows } = await c.query<{ rolname: string }>(
          `SELECT r.rolname FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member
             JOIN pg_roles o ON o.oid = m.roleid WHERE o.rolname = $1 ORDER BY 1`,
          [owner],
        );
        return rows.map((r) => r.rolname);
      });

    it('the sweep drops a credential-looking member of a managed owner role that has no row, and nothing else', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const physical = (await databaseRow(t, db.id)).physical_name;
      const owner = `${physical}_owner`;
      const kept = await issue(db);
      // A role left behind with no row (a create from before rows were written first, or one an
      // operator made by hand inside the owner role).
      const orphan = randomUUID();
      await onDataPlane(async (c) => {
        await c.query(`CREATE ROLE ${c.escapeIdentifier(orphan)} LOGIN IN ROLE ${c.escapeIdentifier(owner)}`);
      });
      expect(await roleExists(orphan)).toBe(true);
      expect(await t.dataSource.query('SELECT id FROM credentials WHERE id = $1', [orphan])).toEqual([]);

      // Roles the sweep must leave alone: a uuid-named role that is no member of any owner role,
      // and one that is a member of an owner role this deployment does not manage.
      const loner = randomUUID();
      const foreignOwner = `${process.env.DATA_PLANE_NAME_PREFIX!}foreign_${unique()}_owner`;
      const foreignMember = randomUUID();
      await onDataPlane(async (c) => {
        await c.query(`CREATE ROLE ${c.escapeIdentifier(loner)} LOGIN`);
        await c.query(`CREATE ROLE ${c.escapeIdentifier(foreignOwner)} NOLOGIN`);
        await c.query(
          `CREATE ROLE ${c.escapeIdentifier(foreignMember)} LOGIN IN ROLE ${c.escapeIdentifier(foreignOwner)}`,
        );
      });
      try {
        await reconcile(t.app);
        expect(await roleExists(orphan)).toBe(false);
        expect(await members(owner)).toEqual([kept.id]);
        expect(await roleExists(owner)).toBe(true);
        await expect(queryAs(db.dbHost!, kept.id, kept.password, 'SELECT 1')).resolves.toHaveLength(1);
        expect(await roleExists(loner)).toBe(true);
        expect(await roleExists(foreignOwner)).toBe(true);
        expect(await roleExists(foreignMember)).toBe(true);
        // Another pass finds nothing more to do.
        await reconcile(t.app);
        expect(await members(owner)).toEqual([kept.id]);
      } finally {
        await onDataPlane(async (c) => {
          for (const role of [loner, foreignMember, foreignOwner])
            await c.query(`DROP ROLE IF EXISTS ${c.escapeIdentifier(role)}`);
        });
      }
    });

    it('never drops the role of a create still in flight (made on the data plane, not yet confirmed)', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const dataPlane = t.app.get(DataPlane);
      const service = t.app.get(CredentialsService);
      let sweep: Promise<void> | undefined;
      let made: string | undefined;
      const create = jest.spyOn(dataPlane, 'createLoginRole').mockImplementationOnce(async (...args) => {
        await DataPlane.prototype.createLoginRole.apply(dataPlane, args);
        made = args[1];
        // The sweep runs while the role exists and its create is not confirmed yet.
        sweep = service.sweep();
        await new Promise((resolve) => setTimeout(resolve, 1000));
      });
      let cred: Issued;
      try {
        cred = await issue(db);
      } finally {
        create.mockRestore();
      }
      expect(cred.id).toBe(made);
      await sweep;
      expect(await roleExists(cred.id)).toBe(true);
      await expect(queryAs(db.dbHost!, cred.id, cred.password, 'SELECT 1')).resolves.toHaveLength(1);
    });
  });

  describe('a create whose role is still in the making when the sweep looks at its pending row', () => {
    /** Creates a credential whose row has aged `seconds` and seen a sweep by the time its role is made. */
    async function createAgedBeforeItsRole(db: { name: string }, seconds: number) {
      const dataPlane = t.app.get(DataPlane);
      const service = t.app.get(CredentialsService);
      let made: string | undefined;
      const create = jest.spyOn(dataPlane, 'createLoginRole').mockImplementationOnce(async (...args) => {
        made = args[1];
        await t.dataSource.query(`UPDATE credentials SET created = created - $2 * interval '1 second' WHERE id = $1`, [
          made,
          seconds,
        ]);
        await service.sweep();
        await DataPlane.prototype.createLoginRole.apply(dataPlane, args);
      });
      try {
        const res = await t.http.post(credentialsPath(db)).set(auth);
        return { res, id: made! };
      } finally {
        create.mockRestore();
      }
    }

    it('is not given up while its data-plane call may still be waiting (the client waits up to connect + DDL timeout, 125 s)', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const { res, id } = await createAgedBeforeItsRole(db, 121);
      expect(res.status).toBe(200);
      const cred = res.body as Issued;
      expect(cred.id).toBe(id);
      await expect(queryAs(db.dbHost!, cred.id, cred.password, 'SELECT 1')).resolves.toHaveLength(1);
      await reconcile(t.app);
      expect(await roleExists(cred.id)).toBe(true);
    });

    it('given up before its role landed: answers 503 (not 404 for a database that exists) and the sweep drops the role left behind', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const { res, id } = await createAgedBeforeItsRole(db, 3600);
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ errorCode: 'credential_creation_failure', statusCode: 503 });
      expect(res.headers['retry-after']).toBeDefined();
      // The sweep gave the row up and marked it dropped before the role was made.
      expect((await credentialRow(id)).dropped).not.toBeNull();
      expect(await roleExists(id)).toBe(true);
      await reconcile(t.app);
      expect(await roleExists(id)).toBe(false);
      expect((await t.http.get(credentialsPath(db)).set(auth).expect(200)).body).toEqual([]);
    });
  });

  it('the sweep gives up crashed creates without waiting for a row another transaction holds (a finalization marking its database’s credentials dropped): that one is left to the next sweep', async () => {
    const db = await createReadyDatabase(t, auth, slug);
    const cred = await issue(db);
    // As a create that crashed an hour ago left it.
    await t.dataSource.query(
      `UPDATE credentials SET pending = true, created = created - interval '1 hour' WHERE id = $1`,
      [cred.id],
    );
    const credentials = t.app.get(CredentialsRepository);
    const abandon = () => credentials.abandonPendingCreatedBefore(new Date(Date.now() - 60_000), new Date());
    const holder = t.dataSource.createQueryRunner();
    await holder.connect();
    try {
      await holder.startTransaction();
      await holder.query('SELECT id FROM credentials WHERE id = $1 FOR UPDATE', [cred.id]);
      const started = Date.now();
      await abandon();
      expect(Date.now() - started).toBeLessThan(2000);
      expect((await credentialRow(cred.id)).expires_at).toBeNull();
    } finally {
      await holder.rollbackTransaction().catch(() => undefined);
      await holder.release();
    }
    await abandon();
    expect((await credentialRow(cred.id)).expires_at).not.toBeNull();
  });

  describe('a database queued for deletion', () => {
    it('keeps its credentials working until finalization, which drops them', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const before = await issue(db);
      await t.http.delete(`/workspaces/${slug}/databases/${db.name}`).set(auth).expect(200);

      await expect(queryAs(db.dbHost!, before.id, before.password, 'SELECT 1')).resolves.toHaveLength(1);
      const during = await issue(db);
      await expect(queryAs(db.dbHost!, during.id, during.password, 'SELECT 1')).resolves.toHaveLength(1);
      const list = await t.http.get(credentialsPath(db)).set(auth).expect(200);
      expect(list.body.map((c: { id: string }) => c.id).sort()).toEqual([before.id, during.id].sort());

      const session = await connectAs(db.dbHost!, during.id, during.password);
      try {
        await t.dataSource.query("UPDATE databases SET deletion_due_at = now() - interval '1 second' WHERE id = $1", [
          db.id,
        ]);
        await expect(t.app.get(DatabaseLifecycle).finalize(db.id)).resolves.toBe(true);
        await expect(session.query('SELECT 1')).rejects.toThrow();
      } finally {
        await session.end().catch(() => undefined);
      }
      for (const cred of [before, during]) {
        expect(await roleExists(cred.id)).toBe(false);
        expect((await credentialRow(cred.id)).dropped).not.toBeNull();
      }
      await t.http.get(credentialsPath(db)).set(auth).expect(404);
    });

    it.each([
      ['does not answer', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5433'), { code: 'ECONNREFUSED' })],
      [
        'shuts down (ending the session as a forced drop would)',
        Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      ],
    ])(
      'answers a DELETE of its credential 503 while its server %s, though its deletion is due: the role still logs in until then',
      async (_, failure) => {
        const db = await createReadyDatabase(t, auth, slug);
        const cred = await issue(db);
        await t.http.delete(`/workspaces/${slug}/databases/${db.name}`).set(auth).expect(200);
        // Due, but not finalized: the finalization cannot reach the server either.
        await t.dataSource.query("UPDATE databases SET deletion_due_at = now() - interval '1 second' WHERE id = $1", [
          db.id,
        ]);
        const { server_id: serverId } = await databaseRow(t, db.id);
        const down = jest
          .spyOn(t.app.get(DataPlane), 'dropLoginRole')
          .mockRejectedValue(new DataPlaneError('AWS_US_WEST_2', serverId!, true, failure));
        try {
          const res = await t.http
            .delete(`${credentialsPath(db)}/${cred.id}`)
            .set(auth)
            .expect(503);
          expect(res.body).toMatchObject({ errorCode: 'credential_propagation_failure', statusCode: 503 });
          expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
        } finally {
          down.mockRestore();
        }
        await expect(queryAs(db.dbHost!, cred.id, cred.password, 'SELECT 1')).resolves.toHaveLength(1);
        await expect(t.app.get(DatabaseLifecycle).finalize(db.id)).resolves.toBe(true);
        expect(await roleExists(cred.id)).toBe(false);
      },
    );

    it('is reached by its id once a new database has its name: its credentials can still be listed and revoked', async () => {
      const old = await createReadyDatabase(t, auth, slug);
      const leaked = await issue(old);
      await t.http.delete(`/workspaces/${slug}/databases/${old.name}`).set(auth).expect(200);
      const fresh = await createReadyDatabase(t, auth, slug, old.name);
      // The name is the new database's now.
      expect((await t.http.get(credentialsPath(old)).set(auth).expect(200)).body).toEqual([]);

      const byId = { name: old.id };
      const got = await t.http.get(`/workspaces/${slug}/databases/${old.id.toUpperCase()}`).set(auth).expect(200);
      expect(got.body).toMatchObject({ id: old.id, name: old.name, deleted: expect.any(String) });
      const listed = await t.http.get(credentialsPath(byId)).set(auth).expect(200);
      expect(listed.body.map((c: { id: string }) => c.id)).toEqual([leaked.id]);
      await expect(queryAs(old.dbHost!, leaked.id, leaked.password, 'SELECT 1')).resolves.toHaveLength(1);
      await t.http
        .delete(`${credentialsPath(byId)}/${leaked.id}`)
        .set(auth)
        .expect(204);
      await expect(queryAs(old.dbHost!, leaked.id, leaked.password, 'SELECT 1')).rejects.toThrow();
      expect(await roleExists(leaked.id)).toBe(false);
      // Another workspace's database is not reached by its id; a finalized one is gone.
      const other = await createWorkspace(t, auth);
      await t.http.get(`/workspaces/${other.slug}/databases/${fresh.id}/credentials`).set(auth).expect(404);
      await t.dataSource.query('UPDATE databases SET finalized = now() WHERE id = $1', [old.id]);
      await t.http.get(credentialsPath(byId)).set(auth).expect(404);
    });

    it('refuses (404) a create whose role was made before the finalization and whose confirmation arrives during its bookkeeping: it waits, nothing is usable, no role is left', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      await t.http.delete(`/workspaces/${slug}/databases/${db.name}`).set(auth).expect(200);
      await t.dataSource.query("UPDATE databases SET deletion_due_at = now() - interval '1 second' WHERE id = $1", [
        db.id,
      ]);
      const step = () => {
        let resolve!: () => void;
        const done = new Promise<void>((r) => (resolve = r));
        return { done, resolve };
      };
      const [roleMade, confirm, marked, commit] = [step(), step(), step(), step()];
      const dataPlane = t.app.get(DataPlane);
      const credentials = t.app.get(CredentialsRepository);
      const createRole = dataPlane.createLoginRole.bind(dataPlane);
      const markDropped = credentials.markDroppedOfDatabase.bind(credentials);
      // The role is made (before the drop), then the create waits to confirm it; the finalization
      // marks the credentials dropped, then waits to mark the database finalized and commit.
      const made = jest.spyOn(dataPlane, 'createLoginRole').mockImplementationOnce(async (...args) => {
        await createRole(...args);
        roleMade.resolve();
        await confirm.done;
      });
      const marking = jest.spyOn(credentials, 'markDroppedOfDatabase').mockImplementationOnce(async (...args) => {
        await markDropped(...args);
        marked.resolve();
        await commit.done;
      });
      try {
        const creating = t.http
          .post(credentialsPath(db))
          .set(auth)
          .then((res) => res);
        await roleMade.done;
        const finalizing = t.app.get(DatabaseLifecycle).finalize(db.id);
        await marked.done;
        confirm.resolve();
        // The confirmation waits for the finalization's transaction.
        await eventually(async () => {
          const waiting = await t.dataSource.query<unknown[]>(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
                AND query LIKE 'UPDATE credentials SET pending = false%' AND cardinality(pg_blocking_pids(pid)) > 0`,
          );
          return waiting.length > 0;
        });
        commit.resolve();
        const res = await creating;
        await expect(finalizing).resolves.toBe(true);
        expect(res.status).toBe(404);
        expect(res.body).toMatchObject({ message: 'The database no longer exists' });
      } finally {
        made.mockRestore();
        marking.mockRestore();
      }
      const rows = await t.dataSource.query<{ id: string; pending: boolean; dropped: boolean }[]>(
        'SELECT id, pending, dropped IS NOT NULL AS dropped FROM credentials WHERE database_id = $1',
        [db.id],
      );
      expect(rows).toEqual([{ id: expect.any(String), pending: true, dropped: true }]);
      expect(await roleExists(rows[0].id)).toBe(false);
      expect((await databaseRow(t, db.id)).finalized).not.toBeNull();
    });
  });
});
