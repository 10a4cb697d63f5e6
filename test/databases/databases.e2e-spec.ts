import { Client } from 'pg';
import { DataPlane } from '../../src/data-plane/data-plane.service';
import { DatabaseLifecycle } from '../../src/databases/database-lifecycle.service';
import { DatabasesService } from '../../src/databases/databases.service';
import { DatabaseStatus } from '../../src/databases/database.entity';
import { WorkspaceEntity } from '../../src/workspaces/workspace.entity';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
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
  createReadyDatabase,
  createWorkspace,
  databaseRow,
  gateNextCall,
  loseLockSession,
  onDataPlane,
  physicalDatabaseExists,
  queryAs,
  roleExists,
  runDatabases,
  unique,
  waitForStatus,
  createWithLostBuild,
} from './support';

const WORKSPACE_BODY = { id: expect.any(String), name: expect.any(String), slug: expect.any(String) };

describe('databases on the data plane', () => {
  let t: TestApp;
  let auth: Auth;
  let slug: string;
  beforeAll(async () => {
    t = await createTestApp({ DATABASE_POOL_TARGET: '0', DATABASE_DELETION_GRACE_SECONDS: '1' });
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
  });
  afterAll(() => t.close());

  const path = (name = '') => `/workspaces/${slug}/databases${name ? `/${name}` : ''}`;

  describe('create', () => {
    it('records the database as REQUESTED, builds it in the background and makes it READY with a hardened physical database', async () => {
      const name = `orders_${unique()}`;
      const res = await t.http.post(path()).set(auth).send({ databaseName: name, region: 'AWS_US_WEST_2' }).expect(201);
      expect(res.body).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        name,
        workspace: expect.objectContaining(WORKSPACE_BODY),
        status: 'REQUESTED',
        region: 'AWS_US_WEST_2',
        expandable: false,
        sharded: false,
        created: expect.any(String),
        apiHost: `http://localhost:3000/databases/${res.body.id}`,
      });
      const ready = await waitForStatus(t, auth, slug, name, 'READY');
      const row = await databaseRow(t, res.body.id);
      expect(row.physical_name).toBe(`${process.env.DATA_PLANE_NAME_PREFIX}${res.body.id.replace(/-/g, '')}`);
      expect(row.physical_name).not.toContain(name);
      expect(row.last_error).toBeNull();
      const dataPlane = new URL(process.env.DATA_PLANE_URL!);
      expect(ready.dbHost).toBe(`postgres://${dataPlane.host}/${row.physical_name}`);

      const physical = await onDataPlane(async (db) => {
        const { rows } = await db.query(
          `SELECT pg_get_userbyid(datdba) AS owner,
                  has_database_privilege('public', oid, 'CONNECT') AS public_connect
             FROM pg_database WHERE datname = $1`,
          [row.physical_name],
        );
        return rows[0];
      });
      // The DATABASE object is the holder role's (credentials cannot ALTER it); what is in it is the owner role's.
      expect(physical).toEqual({ owner: `${process.env.DATA_PLANE_NAME_PREFIX}databases`, public_connect: false });
    });

    it('answers the same body at the apiHost URL to members, and 404 to others', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const byId = await t.http.get(`/databases/${db.id}`).set(auth).expect(200);
      const byName = await t.http.get(path(db.name)).set(auth).expect(200);
      expect(byId.body).toEqual(byName.body);
      const stranger = await createDeveloperWithToken(t.app);
      const res = await t.http.get(`/databases/${db.id}`).set(stranger.auth).expect(404);
      expect(res.body).toEqual({ errorCode: 'entity_not_found', message: expect.any(String), statusCode: 404 });
      await t.http.get('/databases/00000000-0000-4000-8000-000000000000').set(auth).expect(404);
      await t.http.get('/databases/not-an-id').set(auth).expect(404);
    });

    it('allows equal names in two workspaces, each with its own physical database', async () => {
      const other = await createWorkspace(t, auth);
      const name = `shared_${unique()}`;
      const a = await createReadyDatabase(t, auth, slug, name);
      const b = await createReadyDatabase(t, auth, other.slug, name, 'AWS_EU_CENTRAL_1');
      expect(a.id).not.toBe(b.id);
      expect(a.dbHost).not.toBe(b.dbHost);
      const [ra, rb] = [await databaseRow(t, a.id), await databaseRow(t, b.id)];
      expect(await physicalDatabaseExists(ra.physical_name)).toBe(true);
      expect(await physicalDatabaseExists(rb.physical_name)).toBe(true);
    });

    it.each([
      ['', /databaseName must not be empty/],
      ['a'.repeat(64), /databaseName must be fewer than 64 characters/],
      ['9lives', /databaseName must begin with a letter or an underscore/],
      ['my-db', /databaseName may contain only letters, digits and underscores/],
      ['my db', /databaseName may contain only letters, digits and underscores/],
      [42, /databaseName must be a string/],
    ])('refuses the name %j with 400 naming the rule', async (databaseName, message) => {
      const res = await t.http.post(path()).set(auth).send({ databaseName, region: 'AWS_US_WEST_2' }).expect(400);
      expect(res.body).toEqual({ errorCode: 'bad_request', message: expect.stringMatching(message), statusCode: 400 });
    });

    it('accepts a name of 63 characters', async () => {
      const name = `n${unique()}`.padEnd(63, '_');
      await t.http.post(path()).set(auth).send({ databaseName: name, region: 'AWS_US_WEST_2' }).expect(201);
    });

    it.each([['AZURE_EASTUS'], ['aws_us_west_2'], ['MARS_1'], [undefined]])(
      'refuses the region %j with 400 naming the allowed ones',
      async (region) => {
        const res = await t.http
          .post(path())
          .set(auth)
          .send({ databaseName: `r_${unique()}`, region })
          .expect(400);
        expect(res.body).toEqual({
          errorCode: 'bad_request',
          message: expect.stringContaining('region must be one of AWS_US_WEST_2, AWS_EU_CENTRAL_1'),
          statusCode: 400,
        });
      },
    );

    it('refuses unknown fields and a non-boolean sharded', async () => {
      const base = { databaseName: `f_${unique()}`, region: 'AWS_US_WEST_2' };
      expect(
        (
          await t.http
            .post(path())
            .set(auth)
            .send({ ...base, size: 'XL' })
            .expect(400)
        ).body.message,
      ).toMatch(/size/);
      expect(
        (
          await t.http
            .post(path())
            .set(auth)
            .send({ ...base, sharded: 'yes' })
            .expect(400)
        ).body.message,
      ).toMatch(/sharded/);
    });

    it('refuses SQL-injection-shaped names and regions before anything reaches SQL', async () => {
      const before = await runDatabases();
      const [{ count: rowsBefore }] = await t.dataSource.query(
        // This workspace's rows, and any row anywhere with an attempted name (other spec files
        // create databases in the same metadata database meanwhile).
        `SELECT count(*)::int AS count FROM databases d JOIN workspaces w ON w.id = d.workspace_id
          WHERE w.slug = $1 OR d.name LIKE '%DROP%' OR d.name = 'ok_name'`,
        [slug],
      );
      const attempts = [
        { databaseName: 'x"; DROP DATABASE postgres; --', region: 'AWS_US_WEST_2' },
        { databaseName: "a'); DROP ROLE postgres; --", region: 'AWS_US_WEST_2' },
        { databaseName: 'ok_name', region: "AWS_US_WEST_2'; DROP DATABASE postgres; --" },
        { databaseName: 'ok_name', region: 'AWS_US_WEST_2"; CREATE ROLE evil SUPERUSER; --' },
      ];
      for (const body of attempts) {
        const res = await t.http.post(path()).set(auth).send(body).expect(400);
        expect(res.body.errorCode).toBe('bad_request');
      }
      const rename = await t.http
        .put(path(`n_${unique()}`))
        .set(auth)
        .send({ name: 'x"; DROP DATABASE postgres; --' })
        .expect(400);
      expect(rename.body.errorCode).toBe('bad_request');
      const [{ count: rowsAfter }] = await t.dataSource.query(
        // This workspace's rows, and any row anywhere with an attempted name (other spec files
        // create databases in the same metadata database meanwhile).
        `SELECT count(*)::int AS count FROM databases d JOIN workspaces w ON w.id = d.workspace_id
          WHERE w.slug = $1 OR d.name LIKE '%DROP%' OR d.name = 'ok_name'`,
        [slug],
      );
      expect(rowsAfter).toBe(rowsBefore);
      expect(await runDatabases()).toEqual(expect.arrayContaining(before));
      expect(await physicalDatabaseExists('postgres')).toBe(true);
      expect(await roleExists('evil')).toBe(false);
    });

    it('refuses a sharded database with 400 feature_ineligible because the region offers no citus', async () => {
      const name = `sharded_${unique()}`;
      const res = await t.http
        .post(path())
        .set(auth)
        .send({ databaseName: name, region: 'AWS_US_WEST_2', sharded: true })
        .expect(400);
      expect(res.body).toEqual({
        errorCode: 'feature_ineligible',
        message: expect.stringMatching(/citus.*AWS_US_WEST_2|AWS_US_WEST_2.*citus/),
        statusCode: 400,
      });
      await t.http.get(path(name)).set(auth).expect(404);
    });

    it('answers a duplicate name with 409 duplicate_entity', async () => {
      const name = `dup_${unique()}`;
      await t.http.post(path()).set(auth).send({ databaseName: name, region: 'AWS_US_WEST_2' }).expect(201);
      const res = await t.http
        .post(path())
        .set(auth)
        .send({ databaseName: name, region: 'AWS_EU_CENTRAL_1' })
        .expect(409);
      expect(res.body).toEqual({
        errorCode: 'duplicate_entity',
        message: `A database named ${name} already exists in this workspace`,
        statusCode: 409,
      });
    });

    it('gives exactly one success to 20 concurrent creates of one name', async () => {
      const name = `race_${unique()}`;
      const results = await Promise.all(
        Array.from({ length: 20 }, () =>
          t.http.post(path()).set(auth).send({ databaseName: name, region: 'AWS_US_WEST_2' }),
        ),
      );
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([201, ...Array(19).fill(409)]);
      const rows = await t.dataSource.query('SELECT id FROM databases WHERE name = $1', [name]);
      expect(rows).toHaveLength(1);
      await waitForStatus(t, auth, slug, name, 'READY');
    });
  });

  describe('list', () => {
    it('lists the databases that are not deleted, oldest first, pages with a Link header', async () => {
      const ws = (await createWorkspace(t, auth)).slug;
      const names = ['alpha', 'bravo', 'charlie', 'delta', 'echo'];
      for (const name of names) {
        await t.http
          .post(`/workspaces/${ws}/databases`)
          .set(auth)
          .send({ databaseName: name, region: 'AWS_US_WEST_2' })
          .expect(201);
      }
      await t.http.delete(`/workspaces/${ws}/databases/charlie`).set(auth).expect(200);

      const all = await t.http.get(`/workspaces/${ws}/databases`).set(auth).expect(200);
      expect(all.body.map((d: { name: string }) => d.name)).toEqual(['alpha', 'bravo', 'delta', 'echo']);
      expect(all.headers.link).toBeUndefined();

      const seen: string[] = [];
      let url: string | undefined = `/workspaces/${ws}/databases?limit=2`;
      let pages = 0;
      while (url) {
        const res = await t.http.get(url).set(auth).expect(200);
        expect(Array.isArray(res.body)).toBe(true);
        seen.push(...res.body.map((d: { name: string }) => d.name));
        pages += 1;
        const link = res.headers.link as string | undefined;
        if (link) {
          const match = /^<([^>]+)>; rel="next"$/.exec(link);
          expect(match).not.toBeNull();
          const next = new URL(match![1]);
          expect(next.origin).toBe('http://localhost:3000');
          url = `${next.pathname}${next.search}`;
        } else url = undefined;
      }
      expect(seen).toEqual(['alpha', 'bravo', 'delta', 'echo']);
      expect(pages).toBe(2);
    });

    it.each([
      'limit=0',
      'limit=1001',
      'limit=abc',
      'limit=',
      // Decimal digits only: not read as 16, 10, 1 and 2.
      'limit=0x10',
      'limit=1e1',
      'limit=0b1',
      'limit=2.0',
      'cursor=nope',
      'cursor=00000000-0000-4000-8000-000000000000',
    ])('refuses ?%s with 400', async (query) => {
      const res = await t.http.get(`${path()}?${query}`).set(auth).expect(400);
      expect(res.body.errorCode).toBe('bad_request');
    });
  });

  describe('get', () => {
    it('answers 404 entity_not_found for a name with no database', async () => {
      const res = await t.http.get(path('no_such_db')).set(auth).expect(404);
      expect(res.body).toEqual({ errorCode: 'entity_not_found', message: expect.any(String), statusCode: 404 });
      await t.http.get(path('not-a-valid-name')).set(auth).expect(404);
    });

    it('names a database by its id too (any case): get, rename and delete act on that row, renamed or not', async () => {
      const created = await t.http
        .post(path())
        .set(auth)
        .send({ databaseName: `by_id_${unique()}`, region: 'AWS_US_WEST_2' })
        .expect(201);
      const id = created.body.id as string;
      expect((await t.http.get(path(id)).set(auth).expect(200)).body).toMatchObject({ id, name: created.body.name });
      const renamed = await t.http
        .put(path(id))
        .set(auth)
        .send({ name: `renamed_${unique()}` })
        .expect(200);
      expect(renamed.body).toMatchObject({ id, parent: { id, name: created.body.name } });
      // Renamed again by name in between: the id still names it, and the delete by id applies.
      await t.http
        .put(path(renamed.body.name))
        .set(auth)
        .send({ name: `again_${unique()}` })
        .expect(200);
      const deleted = await t.http.delete(path(id.toUpperCase())).set(auth).expect(200);
      expect(deleted.body).toMatchObject({ id, deleted: expect.any(String) });
      expect((await databaseRow(t, id)).deleted).not.toBeNull();
      // Queued for deletion: a rename by id is refused as one by name is, naming the database.
      const refused = await t.http
        .put(path(id))
        .set(auth)
        .send({ name: `late_${unique()}` })
        .expect(409);
      expect(refused.body.message).toMatch(/^Database again_\w+ is queued for deletion/);
      const unknown = '00000000-0000-4000-8000-000000000000';
      expect((await t.http.get(path(unknown)).set(auth).expect(404)).body.message).toBe(
        `No database with id ${unknown} in workspace ${slug}`,
      );
    });
  });

  describe('rename', () => {
    it('renames, keeps the physical database and open connections, frees the old name and says what it was', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const row = await databaseRow(t, db.id);
      const url = new URL(process.env.DATA_PLANE_URL!);
      url.pathname = `/${row.physical_name}`;
      const open = new Client({ connectionString: url.toString() });
      await open.connect();
      try {
        await open.query('CREATE TABLE kept (v int)');
        const newName = `renamed_${unique()}`;
        const res = await t.http.put(path(db.name)).set(auth).send({ name: newName }).expect(200);
        expect(res.body).toMatchObject({
          id: db.id,
          name: newName,
          status: 'READY',
          dbHost: db.dbHost,
          parent: { id: db.id, name: db.name },
        });
        expect((await databaseRow(t, db.id)).physical_name).toBe(row.physical_name);
        await open.query('INSERT INTO kept VALUES (1)');
        await t.http.get(path(db.name)).set(auth).expect(404);
        expect((await t.http.get(path(newName)).set(auth).expect(200)).body.id).toBe(db.id);
        const reuse = await t.http
          .post(path())
          .set(auth)
          .send({ databaseName: db.name, region: 'AWS_US_WEST_2' })
          .expect(201);
        expect(reuse.body.id).not.toBe(db.id);
      } finally {
        await open.end();
      }
    });

    it('answers 409 for a taken name, 400 for an invalid one and 404 for an unknown database', async () => {
      const a = `a_${unique()}`;
      const b = `b_${unique()}`;
      for (const name of [a, b]) {
        await t.http.post(path()).set(auth).send({ databaseName: name, region: 'AWS_US_WEST_2' }).expect(201);
      }
      const taken = await t.http.put(path(a)).set(auth).send({ name: b }).expect(409);
      expect(taken.body).toEqual({
        errorCode: 'duplicate_entity',
        message: `A database named ${b} already exists in this workspace`,
        statusCode: 409,
      });
      const invalid = await t.http.put(path(a)).set(auth).send({ name: '1bad' }).expect(400);
      expect(invalid.body.message).toMatch(/name must begin with a letter or an underscore/);
      await t.http
        .put(path(`nobody_${unique()}`))
        .set(auth)
        .send({ name: `x_${unique()}` })
        .expect(404);
      expect((await t.http.get(path(a)).set(auth).expect(200)).body.name).toBe(a);
    });
  });

  describe('delete', () => {
    it('hides the database at once, keeps answering it by name and finalizes it after the grace period', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const { physical_name: physical } = await databaseRow(t, db.id);
      const res = await t.http.delete(path(db.name)).set(auth).expect(200);
      expect(res.body).toMatchObject({ id: db.id, name: db.name, deleted: expect.any(String) });

      const list = await t.http.get(path()).set(auth).expect(200);
      expect(list.body.map((d: { id: string }) => d.id)).not.toContain(db.id);
      const byName = await t.http.get(path(db.name)).set(auth).expect(200);
      expect(byName.body).toMatchObject({ id: db.id, deleted: res.body.deleted });

      await eventually(async () => (await databaseRow(t, db.id)).finalized !== null, 30000);
      expect(await physicalDatabaseExists(physical)).toBe(false);
      expect(await roleExists(`${physical}_owner`)).toBe(false);
      const tombstone = await databaseRow(t, db.id);
      expect(tombstone).toMatchObject({ name: db.name, deleted: expect.any(Date), finalized: expect.any(Date) });
      await t.http.get(path(db.name)).set(auth).expect(404);
      await t.http.get(`/databases/${db.id}`).set(auth).expect(404);

      // Running the finalization again (a duplicate or late job) changes nothing.
      const lifecycle = t.app.get(DatabaseLifecycle);
      await expect(lifecycle.finalize(db.id)).resolves.toBe(false);
      expect(await databaseRow(t, db.id)).toEqual(tombstone);
    });

    it('frees the name for a new database while the old one is queued', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      await t.http.delete(path(db.name)).set(auth).expect(200);
      const again = await t.http
        .post(path())
        .set(auth)
        .send({ databaseName: db.name, region: 'AWS_US_WEST_2' })
        .expect(201);
      expect(again.body.id).not.toBe(db.id);
      expect((await t.http.get(path(db.name)).set(auth).expect(200)).body.id).toBe(again.body.id);
    });

    it('answers 404 for an unknown database', async () => {
      await t.http
        .delete(path(`ghost_${unique()}`))
        .set(auth)
        .expect(404);
    });
  });

  it("tells which databases a developer may access: those not deleted in the developer's workspaces", async () => {
    const dev = await createDeveloperWithToken(t.app);
    const ws = (await createWorkspace(t, dev.auth)).slug;
    const ids: string[] = [];
    for (const databaseName of ['first', 'second', 'third']) {
      const res = await t.http
        .post(`/workspaces/${ws}/databases`)
        .set(dev.auth)
        .send({ databaseName, region: 'AWS_US_WEST_2' })
        .expect(201);
      ids.push(res.body.id);
    }
    await t.http.delete(`/workspaces/${ws}/databases/second`).set(dev.auth).expect(200);
    const me = await t.http.get('/developers/me').set(dev.auth).expect(200);
    expect(me.body.databases).toEqual([ids[0], ids[2]]);
    const stranger = await t.http
      .get('/developers/me')
      .set((await createDeveloperWithToken(t.app)).auth)
      .expect(200);
    expect(stranger.body.databases).toEqual([]);
  });
});

describe('database lifecycle jobs', () => {
  let t: TestApp;
  let auth: Auth;
  let slug: string;
  beforeAll(async () => {
    t = await createTestApp({
      DATABASE_POOL_TARGET: '0',
      DATABASE_DELETION_GRACE_SECONDS: '3600',
      JOB_ATTEMPTS: '1',
    });
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
  });
  afterAll(() => t.close());

  /** Creates a database and waits until its build has recorded an error (its row as it is then). */
  async function createUntilBuildFails(prefix: string) {
    const name = `${prefix}_${unique()}`;
    const res = await t.http
      .post(`/workspaces/${slug}/databases`)
      .set(auth)
      .send({ databaseName: name, region: 'AWS_US_WEST_2' })
      .expect(201);
    const failed = await eventually(async () => {
      const row = await databaseRow(t, res.body.id);
      return row.last_error ? row : null;
    });
    return { name, res, failed };
  }

  it('keeps a deleted database until its grace period ends, and the sweep finalizes it when its job was lost', async () => {
    const db = await createReadyDatabase(t, auth, slug);
    const { physical_name: physical } = await databaseRow(t, db.id);
    await t.http.delete(`/workspaces/${slug}/databases/${db.name}`).set(auth).expect(200);
    const queue = t.app.get(JobDispatcher).queue('database-lifecycle');
    const job = await queue.getJob(`finalize:${db.id}`);
    expect(job).not.toBeNull();
    expect(job!.opts.delay).toBe(3600 * 1000);

    await reconcile(t.app);
    expect(await physicalDatabaseExists(physical)).toBe(true);
    expect((await databaseRow(t, db.id)).finalized).toBeNull();

    await job!.remove();
    await t.dataSource.query("UPDATE databases SET deletion_due_at = now() - interval '1 second' WHERE id = $1", [
      db.id,
    ]);
    await reconcile(t.app);
    expect(await physicalDatabaseExists(physical)).toBe(false);
    expect((await databaseRow(t, db.id)).finalized).not.toBeNull();
  });

  it('records a failed build, removes the half-made database, keeps the status and retries until it works', async () => {
    const dataPlane = t.app.get(DataPlane);
    const build = dataPlane.buildDatabase.bind(dataPlane);
    const spy = jest.spyOn(dataPlane, 'buildDatabase').mockImplementation(async (...args) => {
      await build(...args);
      throw new Error('injected failure after CREATE DATABASE');
    });
    try {
      const { name, res, failed } = await createUntilBuildFails('flaky');
      expect(failed).toMatchObject({
        status: 'REQUESTED',
        last_error: 'injected failure after CREATE DATABASE',
        provision_attempts: 1,
      });
      expect(await physicalDatabaseExists(failed.physical_name)).toBe(false);
      expect(await roleExists(`${failed.physical_name}_owner`)).toBe(false);
      expect((await t.http.get(`/workspaces/${slug}/databases/${name}`).set(auth).expect(200)).body.status).toBe(
        'REQUESTED',
      );

      spy.mockRestore();
      await reconcile(t.app);
      const ready = await waitForStatus(t, auth, slug, name, 'READY');
      expect(ready.dbHost).toContain(failed.physical_name);
      const row = await databaseRow(t, res.body.id);
      expect(row.last_error).toBeNull();
      expect(row.provision_attempts).toBe(2);
      expect(await physicalDatabaseExists(row.physical_name)).toBe(true);
    } finally {
      spy.mockRestore();
    }
  });

  it('records a build that does not verify as REQUESTED with the error, and builds it again until it verifies', async () => {
    const dataPlane = t.app.get(DataPlane);
    const build = dataPlane.buildDatabase.bind(dataPlane);
    // The build runs for real, then its database is found open to PUBLIC (as a hand-made GRANT would leave it).
    const spy = jest.spyOn(dataPlane, 'buildDatabase').mockImplementationOnce(async (...args) => {
      const hardened = await build(...args);
      expect(hardened).toBe(true);
      await onDataPlane((c) => c.query(`GRANT CONNECT ON DATABASE ${c.escapeIdentifier(args[1])} TO PUBLIC`));
      return dataPlane.isDatabaseHardened(args[0], args[1]);
    });
    try {
      const { name, res, failed } = await createUntilBuildFails('unverified');
      expect(failed).toMatchObject({
        status: 'REQUESTED',
        last_error: 'the built database failed verification (missing, wrong owner or open to PUBLIC)',
        provision_attempts: 1,
      });
      spy.mockRestore();
      await reconcile(t.app);
      await waitForStatus(t, auth, slug, name, 'READY');
      const row = await databaseRow(t, res.body.id);
      expect(row).toMatchObject({ last_error: null, provision_attempts: 2 });
      // The rebuild closed it to PUBLIC again.
      expect(await dataPlane.isDatabaseHardened(row.server_id!, row.physical_name)).toBe(true);
    } finally {
      spy.mockRestore();
    }
  });

  it('builds a row an earlier version left BUILT (built, not yet verified) again and makes it READY', async () => {
    const name = `left_built_${unique()}`;
    const res = await t.http
      .post(`/workspaces/${slug}/databases`)
      .set(auth)
      .send({ databaseName: name, region: 'AWS_US_WEST_2' })
      .expect(201);
    await waitForStatus(t, auth, slug, name, 'READY');
    // As an earlier version could leave it: BUILT, with its physical database half-hardened.
    const { physical_name: physical } = await databaseRow(t, res.body.id);
    await onDataPlane((c) => c.query(`GRANT CONNECT ON DATABASE ${c.escapeIdentifier(physical)} TO PUBLIC`));
    await t.dataSource.query(`UPDATE databases SET status = 'BUILT' WHERE id = $1`, [res.body.id]);
    await t.app.get(DatabaseLifecycle).provision(res.body.id);
    expect(await databaseRow(t, res.body.id)).toMatchObject({ status: 'READY', last_error: null });
    const server = (await databaseRow(t, res.body.id)).server_id;
    expect(await t.app.get(DataPlane).isDatabaseHardened(server!, physical)).toBe(true);
  });

  it("enqueues the build with the database's placement; a build whose placement is not the row's goes by the row", async () => {
    // The build's job as enqueued: this process's worker is paused until it has been read.
    const queue = t.app.get(JobDispatcher).queue('database-lifecycle');
    await queue.pause(true);
    const name = `placed_${unique()}`;
    let id: string;
    let job: Awaited<ReturnType<typeof queue.getJob>>;
    try {
      id = (
        await t.http
          .post(`/workspaces/${slug}/databases`)
          .set(auth)
          .send({ databaseName: name, region: 'AWS_US_WEST_2' })
          .expect(201)
      ).body.id;
      job = await queue.getJob(`provision:${id}`);
    } finally {
      await queue.resume(true);
    }
    await waitForStatus(t, auth, slug, name, 'READY');
    const { server_id: serverId, physical_name: physical } = await databaseRow(t, id);
    expect(job?.data).toEqual({ databaseId: id, placement: { serverId, physicalName: physical } });
    // Left BUILT and open to PUBLIC (as an earlier version could leave it), then a job naming another
    // physical name: it must take the lock of the row's database, which a finalization holds here.
    await onDataPlane((c) => c.query(`GRANT CONNECT ON DATABASE ${c.escapeIdentifier(physical)} TO PUBLIC`));
    await t.dataSource.query(`UPDATE databases SET status = 'BUILT' WHERE id = $1`, [id]);
    const lifecycle = t.app.get(DatabaseLifecycle);
    const dataPlane = t.app.get(DataPlane);
    const misplaced = { serverId: serverId!, physicalName: `${physical}_elsewhere` };
    await dataPlane.exclusively(serverId!, `database:${physical}`, () => lifecycle.provision(id, misplaced));
    expect(await databaseRow(t, id)).toMatchObject({ status: 'BUILT' });
    await lifecycle.provision(id, misplaced);
    expect(await databaseRow(t, id)).toMatchObject({ status: 'READY', last_error: null });
    expect(await dataPlane.isDatabaseHardened(serverId!, physical)).toBe(true);
  });

  it('answers a second delete with the same body, and refuses to rename a database queued for deletion', async () => {
    const db = await createReadyDatabase(t, auth, slug);
    const path = `/workspaces/${slug}/databases/${db.name}`;
    const first = await t.http.delete(path).set(auth).expect(200);
    const second = await t.http.delete(path).set(auth).expect(200);
    expect(second.body).toEqual(first.body);
    const concurrent = await Promise.all([1, 2, 3].map(() => t.http.delete(path).set(auth)));
    expect(concurrent.map((r) => r.body.deleted)).toEqual([first.body.deleted, first.body.deleted, first.body.deleted]);
    const rename = await t.http
      .put(path)
      .set(auth)
      .send({ name: `moved_${unique()}` })
      .expect(409);
    expect(rename.body).toEqual({
      errorCode: 'db_status_failure',
      message: `Database ${db.name} is queued for deletion and cannot be renamed`,
      statusCode: 409,
    });
  });

  const workspaceEntity = (wsSlug: string) =>
    t.dataSource.getRepository(WorkspaceEntity).findOneByOrFail({ slug: wsSlug });

  /**
   * Sends `late` as a request that read the database `name` before `meanwhile` committed: the
   * service's look-up answers it what it read then.
   */
  async function afterStaleRead<T>(
    name: string,
    meanwhile: () => Promise<unknown>,
    late: () => Promise<T>,
  ): Promise<T> {
    const service = t.app.get(DatabasesService);
    const stale = await service.findOperable(await workspaceEntity(slug), name);
    await meanwhile();
    const spy = jest.spyOn(service, 'findOperable').mockResolvedValueOnce(stale);
    try {
      return await late();
    } finally {
      spy.mockRestore();
    }
  }

  it('refuses a rename that read the database before a delete committed (the delete wins)', async () => {
    const db = await createReadyDatabase(t, auth, slug);
    const path = `/workspaces/${slug}/databases/${db.name}`;
    const rename = await afterStaleRead(
      db.name,
      () => t.http.delete(path).set(auth).expect(200),
      () =>
        t.http
          .put(path)
          .set(auth)
          .send({ name: `late_${unique()}` })
          .expect(409),
    );
    expect(rename.body.errorCode).toBe('db_status_failure');
    expect((await databaseRow(t, db.id)).name).toBe(db.name);
  });

  it('refuses a rename that read the database before another rename committed (404: nothing has the old name)', async () => {
    const db = await createReadyDatabase(t, auth, slug);
    const path = `/workspaces/${slug}/databases/${db.name}`;
    const first = `first_${unique()}`;
    const late = await afterStaleRead(
      db.name,
      () => t.http.put(path).set(auth).send({ name: first }).expect(200),
      () =>
        t.http
          .put(path)
          .set(auth)
          .send({ name: `late_${unique()}` })
          .expect(404),
    );
    expect(late.body.errorCode).toBe('entity_not_found');
    expect((await databaseRow(t, db.id)).name).toBe(first);
  });

  it('refuses a delete that read the database before a rename committed (404), and deletes nothing', async () => {
    const db = await createReadyDatabase(t, auth, slug);
    const path = `/workspaces/${slug}/databases/${db.name}`;
    const renamed = `renamed_${unique()}`;
    const late = await afterStaleRead(
      db.name,
      () => t.http.put(path).set(auth).send({ name: renamed }).expect(200),
      () => t.http.delete(path).set(auth).expect(404),
    );
    expect(late.body.errorCode).toBe('entity_not_found');
    expect(await databaseRow(t, db.id)).toMatchObject({ name: renamed, deleted: null, deletion_due_at: null });
    await t.http.get(`/workspaces/${slug}/databases/${renamed}`).set(auth).expect(200);
  });

  it('deletes concurrently once: every answer carries the one recorded deletion time', async () => {
    const db = await createReadyDatabase(t, auth, slug);
    const path = `/workspaces/${slug}/databases/${db.name}`;
    const results = await Promise.all(Array.from({ length: 5 }, () => t.http.delete(path).set(auth)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const row = await databaseRow(t, db.id);
    for (const r of results) expect(r.body.deleted).toBe(new Date(row.deleted!).toISOString());
  });

  it("finalization drops the credentials' roles and the owner role, never another role an operator made a member of the owner", async () => {
    const db = await createReadyDatabase(t, auth, slug);
    const { physical_name: physical } = await databaseRow(t, db.id);
    const credential = await t.http.post(`/workspaces/${slug}/databases/${db.name}/credentials`).set(auth).expect(200);
    // e.g. a support role granted the owner role to look into a customer database
    const support = `support_${unique()}`;
    await onDataPlane(async (c) => {
      await c.query(`CREATE ROLE ${c.escapeIdentifier(support)} NOLOGIN`);
      await c.query(`GRANT ${c.escapeIdentifier(`${physical}_owner`)} TO ${c.escapeIdentifier(support)}`);
    });
    try {
      await t.http.delete(`/workspaces/${slug}/databases/${db.name}`).set(auth).expect(200);
      await t.dataSource.query("UPDATE databases SET deletion_due_at = now() - interval '1 second' WHERE id = $1", [
        db.id,
      ]);
      await expect(t.app.get(DatabaseLifecycle).finalize(db.id)).resolves.toBe(true);
      expect(await physicalDatabaseExists(physical)).toBe(false);
      expect(await roleExists(credential.body.id)).toBe(false);
      expect(await roleExists(`${physical}_owner`)).toBe(false);
      expect(await roleExists(support)).toBe(true);
    } finally {
      await onDataPlane((c) => c.query(`DROP ROLE IF EXISTS ${c.escapeIdentifier(support)}`));
    }
  });

  it("finalizes a deletion only in the database's turn: while another run holds its lock on the server, it refuses and drops nothing", async () => {
    const db = await createReadyDatabase(t, auth, slug);
    const { server_id: serverId, physical_name: physical } = await databaseRow(t, db.id);
    await t.http.delete(`/workspaces/${slug}/databases/${db.name}`).set(auth).expect(200);
    await t.dataSource.query("UPDATE databases SET deletion_due_at = now() - interval '1 second' WHERE id = $1", [
      db.id,
    ]);
    const lifecycle = t.app.get(DatabaseLifecycle);
    // Another run (a build, or a second finalization) holds the database's lock on its server.
    const held = await t.app.get(DataPlane).exclusively(serverId!, `database:${physical}`, async () => {
      await expect(lifecycle.finalize(db.id)).rejects.toThrow(
        `database ${db.id} is being worked on by another run; finalization will retry`,
      );
      expect(await physicalDatabaseExists(physical)).toBe(true);
      expect((await databaseRow(t, db.id)).finalized).toBeNull();
      return true;
    });
    expect(held).toBe(true);
    // Once the lock is free, the retry finalizes it.
    await expect(lifecycle.finalize(db.id)).resolves.toBe(true);
    expect(await physicalDatabaseExists(physical)).toBe(false);
    expect((await databaseRow(t, db.id)).finalized).not.toBeNull();
  });

  it('keeps a database READY when a build that lost its lock session meanwhile fails verification late', async () => {
    const db = await createReadyDatabase(t, auth, slug);
    const { server_id: serverId, physical_name: physical } = await databaseRow(t, db.id);
    // Built again (as an earlier version could leave it), so a run takes it up.
    await t.dataSource.query(`UPDATE databases SET status = 'BUILT' WHERE id = $1`, [db.id]);
    const dataPlane = t.app.get(DataPlane);
    const lifecycle = t.app.get(DatabaseLifecycle);
    // The first run's build is slow and ends up unverified.
    const build = gateNextCall(dataPlane, 'buildDatabase', () => false);
    try {
      const slow = lifecycle.provision(db.id);
      slow.catch(() => undefined);
      await build.started;
      // Its lock session is lost (the server dropped it): the database's lock is free again.
      await loseLockSession(`database:${physical}`);
      // Another run takes the lock, builds and verifies it.
      await lifecycle.provision(db.id);
      expect(await databaseRow(t, db.id)).toMatchObject({ status: 'READY', last_error: null });
      build.release();
      await expect(slow).rejects.toThrow('the built database failed verification');
    } finally {
      build.release();
      build.restore();
    }
    // The late outcome finds the row moved on: READY stays, no error recorded.
    expect(await databaseRow(t, db.id)).toMatchObject({ status: 'READY', last_error: null });
    expect(await dataPlane.isDatabaseHardened(serverId!, physical)).toBe(true);
  });

  it('keeps a READY database, its physical database and its credentials when a build that lost its lock session meanwhile throws late', async () => {
    const db = await createReadyDatabase(t, auth, slug);
    const { server_id: serverId, physical_name: physical } = await databaseRow(t, db.id);
    // Built again (as an earlier version could leave it), so a run takes it up.
    await t.dataSource.query(`UPDATE databases SET status = 'BUILT' WHERE id = $1`, [db.id]);
    const dataPlane = t.app.get(DataPlane);
    const lifecycle = t.app.get(DatabaseLifecycle);
    // The first run's build is slow and ends with an error (as a statement timeout would).
    const build = gateNextCall(dataPlane, 'buildDatabase', () => {
      throw new Error('canceling statement due to statement timeout');
    });
    let credential!: { id: string; password: string };
    try {
      const slow = lifecycle.provision(db.id);
      slow.catch(() => undefined);
      await build.started;
      // Its lock session is lost (the server dropped it): the database's lock is free again.
      await loseLockSession(`database:${physical}`);
      // Another run takes the lock, builds and verifies it; a credential is issued on it.
      await lifecycle.provision(db.id);
      expect(await databaseRow(t, db.id)).toMatchObject({ status: 'READY', last_error: null });
      credential = (await t.http.post(`/workspaces/${slug}/databases/${db.name}/credentials`).set(auth).expect(200))
        .body as { id: string; password: string };
      build.release();
      await expect(slow).rejects.toThrow('canceling statement due to statement timeout');
    } finally {
      build.release();
      build.restore();
    }
    // The late failure drops nothing another run completed, and records no error on it.
    expect(await physicalDatabaseExists(physical)).toBe(true);
    expect(await roleExists(credential.id)).toBe(true);
    expect(await dataPlane.isDatabaseHardened(serverId!, physical)).toBe(true);
    expect(await databaseRow(t, db.id)).toMatchObject({ status: 'READY', last_error: null });
    await expect(queryAs(db.dbHost!, credential.id, credential.password, 'SELECT 1 AS one')).resolves.toEqual([
      { one: 1 },
    ]);
  });

  it('builds a database deleted before its build ran: it works until its deletion is due', async () => {
    const name = `early_${unique()}`;
    const id = await createWithLostBuild(t, auth, slug, name);
    await t.http.delete(`/workspaces/${slug}/databases/${name}`).set(auth).expect(200);
    expect((await databaseRow(t, id)).status).toBe('REQUESTED');

    // The sweep takes up the build it is owed, deleted or not.
    await reconcile(t.app);
    const row = await eventually(async () => {
      const r = await databaseRow(t, id);
      return r.status === DatabaseStatus.Ready ? r : null;
    });
    expect(row.deleted).not.toBeNull();
    expect(row.finalized).toBeNull();
    expect(await physicalDatabaseExists(row.physical_name)).toBe(true);
    const body = (await t.http.get(`/databases/${id}`).set(auth).expect(200)).body as { dbHost: string };
    const credential = (await t.http.post(`/workspaces/${slug}/databases/${name}/credentials`).set(auth).expect(200))
      .body as { id: string; password: string };
    await expect(queryAs(body.dbHost, credential.id, credential.password, 'SELECT 1 AS one')).resolves.toEqual([
      { one: 1 },
    ]);
  });

  it('never builds a database whose deletion came due before its build ran; its finalization is all it gets', async () => {
    const lifecycle = t.app.get(DatabaseLifecycle);
    const name = `due_${unique()}`;
    const id = await createWithLostBuild(t, auth, slug, name);
    await t.http.delete(`/workspaces/${slug}/databases/${name}`).set(auth).expect(200);
    await t.dataSource.query("UPDATE databases SET deletion_due_at = now() - interval '1 second' WHERE id = $1", [id]);
    const buildDatabase = jest.spyOn(t.app.get(DataPlane), 'buildDatabase');
    try {
      await lifecycle.provision(id);
      await reconcile(t.app);
      expect(buildDatabase).not.toHaveBeenCalled();
    } finally {
      buildDatabase.mockRestore();
    }
    const row = await databaseRow(t, id);
    expect(row.finalized).not.toBeNull();
    expect(await physicalDatabaseExists(row.physical_name)).toBe(false);
  });

  it('drops what a build that lost its lock session made when its database was finalized meanwhile', async () => {
    const lifecycle = t.app.get(DatabaseLifecycle);
    const dataPlane = t.app.get(DataPlane);
    // Its build job is lost: the build below is run by hand, to be held at its start.
    const id = await createWithLostBuild(t, auth, slug, `late_${unique()}`);
    const { server_id: serverId, physical_name: physical, workspace_id: workspaceId } = await databaseRow(t, id);
    const buildDatabase = dataPlane.buildDatabase.bind(dataPlane);
    // The build is slow (CREATE DATABASE waiting for a checkpoint)...
    const build = gateNextCall(dataPlane, 'buildDatabase', () =>
      buildDatabase(serverId!, physical, { sharded: false }),
    );
    try {
      const slow = lifecycle.provision(id);
      slow.catch(() => undefined);
      await build.started;
      // ...its database is deleted, due at once (as an abandoned instant database is), and its lock
      // session is lost (the server dropped it): the finalization takes the lock and has nothing to drop.
      await t.app.get(DatabasesService).deleteNowIfIn(id, workspaceId);
      await loseLockSession(`database:${physical}`);
      await eventually(async () => {
        await lifecycle.finalize(id).catch(() => false);
        return (await databaseRow(t, id)).finalized;
      });
      // Then the build makes the database after all.
      build.release();
      await slow;
    } finally {
      build.release();
      build.restore();
    }
    expect(await databaseRow(t, id)).toMatchObject({ status: 'REQUESTED', finalized: expect.any(Date) });
    expect(await physicalDatabaseExists(physical)).toBe(false);
    expect(await roleExists(`${physical}_owner`)).toBe(false);
  });

  it('runs a provisioning job twice harmlessly', async () => {
    const db = await createReadyDatabase(t, auth, slug);
    const before = await databaseRow(t, db.id);
    await t.app.get(DatabaseLifecycle).provision(db.id);
    await t.app
      .get(DatabaseLifecycle)
      .provision(db.id, { serverId: before.server_id!, physicalName: before.physical_name });
    expect(await databaseRow(t, db.id)).toEqual(before);
  });
});

describe('a region whose data plane cannot be reached', () => {
  let t: TestApp;
  beforeAll(async () => {
    const broken = new URL(process.env.DATA_PLANE_URL!);
    broken.password = 'wrong-password';
    // Its fleet (an EU server that refuses the login) must not become other specs' fleet.
    t = await createIsolatedTestApp({
      DATABASE_POOL_TARGET: '0',
      JOB_ATTEMPTS: '1',
      DATA_PLANE_URL_AWS_EU_CENTRAL_1: broken.toString(),
    });
  });
  afterAll(() => t.close());

  it('leaves the database REQUESTED with the failure recorded for operators', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const { slug } = await createWorkspace(t, auth);
    const name = `eu_${unique()}`;
    const res = await t.http
      .post(`/workspaces/${slug}/databases`)
      .set(auth)
      .send({ databaseName: name, region: 'AWS_EU_CENTRAL_1' })
      .expect(201);
    const row = await eventually(async () => {
      const r = await databaseRow(t, res.body.id);
      return r.last_error ? r : null;
    });
    expect(row.status).toBe('REQUESTED');
    expect(row.last_error).toMatch(/password authentication failed/);
    const body = (await t.http.get(`/workspaces/${slug}/databases/${name}`).set(auth).expect(200)).body;
    expect(body.status).toBe('REQUESTED');
    expect(body.dbHost).toBeUndefined();
    expect(JSON.stringify(body)).not.toContain('wrong-password');
  });

  it("re-enqueues a lost build on another server while the unreachable server's builds would fill the sweep's batch", async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const workspace = await createWorkspace(t, auth);
    // More builds owed to the unreachable server, all older, than a pass of the sweep takes (500).
    await t.dataSource.query(
      `INSERT INTO databases (workspace_id, name, region, server_id, sharded, status, physical_name, created)
       SELECT $1, 'stuck_' || g, 'AWS_EU_CENTRAL_1', (SELECT id FROM data_plane_servers WHERE region = 'AWS_EU_CENTRAL_1'),
              false, 'REQUESTED', 'stuck' || replace(gen_random_uuid()::text, '-', ''),
              now() - interval '1 hour' + g * interval '1 ms'
         FROM generate_series(1, 600) g`,
      [workspace.id],
    );
    // A create in the reachable region whose job is lost.
    const name = `us_${unique()}`;
    const id = await createWithLostBuild(t, auth, workspace.slug, name);
    try {
      await reconcile(t.app);
      await waitForStatus(t, auth, workspace.slug, name, 'READY');
    } finally {
      await t.dataSource.query(
        `UPDATE databases SET finalized = now() WHERE region = 'AWS_EU_CENTRAL_1' AND workspace_id = $1`,
        [workspace.id],
      );
    }
    expect((await databaseRow(t, id)).status).toBe('READY');
  });
});
