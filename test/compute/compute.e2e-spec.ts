import { AppConfig } from '../../src/config/app-config';
import { ComputeLifecycle } from '../../src/compute/compute-lifecycle.service';
import { DataPlane } from '../../src/data-plane/data-plane.service';
import { DatabaseLifecycle } from '../../src/databases/database-lifecycle.service';
import { untilAsleep, withSlowRows } from '../support/slow-rows';
import { createDeveloperWithToken, createTestApp, eventually, reconcile, TestApp } from '../support/test-app';
import {
  Auth,
  DatabaseBody,
  createAppWithUnbuildableEuRegion,
  createReadyDatabase,
  createWorkspace,
  databaseRow,
  unique,
} from '../databases/support';
import { connectionLimit, InstanceBody, instanceRow, periodsOf, TYPES, waitForInstance } from './support';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

describe('dedicated compute', () => {
  let t: TestApp;
  let auth: Auth;
  let slug: string;
  let workspaceId: string;
  /** What a database without instances accepts; every instance adds its connections on top. */
  let base: number;
  beforeAll(async () => {
    t = await createAppWithUnbuildableEuRegion();
    base = t.app.get(AppConfig).env.DATA_PLANE_DEFAULT_CONNECTION_LIMIT;
    auth = (await createDeveloperWithToken(t.app)).auth;
    const workspace = await createWorkspace(t, auth);
    slug = workspace.slug;
    workspaceId = workspace.id;
  });
  afterAll(() => t.close());

  const computePath = (db: { name: string }, id = '') =>
    `/workspaces/${slug}/databases/${db.name}/compute${id ? `/${id}` : ''}`;

  async function createInstance(db: { name: string }, instanceSize: string, instanceName = `ci_${unique()}`) {
    const res = await t.http.post(computePath(db)).set(auth).send({ instanceSize, instanceName }).expect(202);
    return res.body as InstanceBody;
  }

  async function createReadyInstance(db: { name: string }, instanceSize: string): Promise<InstanceBody> {
    const created = await createInstance(db, instanceSize);
    return waitForInstance(t, auth, slug, db.name, created.instanceId, 'READY');
  }

  describe('compute types', () => {
    it('lists the types on offer in display order, memory as text and the hourly cost in USD', async () => {
      const res = await t.http.get(`/workspaces/${slug}/compute-types`).set(auth).expect(200);
      expect(res.body).toEqual([TYPES.small, TYPES.medium, TYPES.large, TYPES.xlarge]);
    });
  });

  describe('create', () => {
    let db: DatabaseBody;
    beforeAll(async () => {
      db = await createReadyDatabase(t, auth, slug);
    });

    it('answers 202 with the PENDING instance, provisions it through the job to READY and applies its connections on the data plane', async () => {
      expect(await connectionLimit(t, db.id)).toBe(base);
      const res = await t.http
        .post(computePath(db))
        .set(auth)
        .send({ instanceSize: 'dc-small', instanceName: 'reporting' })
        .expect(202);
      expect(res.body).toEqual({
        instanceId: expect.stringMatching(UUID),
        workspace: expect.objectContaining({ id: workspaceId, slug }),
        database: expect.objectContaining({ id: db.id, name: db.name, status: 'READY', region: 'AWS_US_WEST_2' }),
        region: 'AWS_US_WEST_2',
        instanceName: 'reporting',
        instanceType: TYPES.small,
        desiredInstanceType: TYPES.small,
        status: 'PENDING',
        created: expect.stringMatching(ISO),
        updated: expect.stringMatching(ISO),
      });
      const id = res.body.instanceId as string;

      const ready = await waitForInstance(t, auth, slug, db.name, id, 'READY');
      expect(ready).toMatchObject({ instanceId: id, instanceType: TYPES.small, desiredInstanceType: TYPES.small });
      expect(ready.deleted).toBeUndefined();
      expect(await instanceRow(t, id)).toMatchObject({
        database_id: db.id,
        name: 'reporting',
        instance_type_id: 'dc-small',
        desired_instance_type_id: 'dc-small',
        status: 'READY',
        last_error: null,
        deleted: null,
        terminated: null,
      });
      expect(await connectionLimit(t, db.id)).toBe(base + 50);
      const periods = await periodsOf(t, id);
      expect(periods).toEqual([
        expect.objectContaining({
          instance_id: id,
          database_id: db.id,
          workspace_id: workspaceId,
          instance_type_id: 'dc-small',
          compute_size: 'small',
          vcpus: 2,
          hourly_cost: '0.1000',
          started_at: expect.any(Date),
          ended_at: null,
        }),
      ]);
    });

    it('accepts the size by its name and a JSON body sent as */* or text/plain; instances add up their connections', async () => {
      const other = await createReadyDatabase(t, auth, slug);
      const asAnything = await t.http
        .post(computePath(other))
        .set(auth)
        .set('Content-Type', '*/*')
        .send(JSON.stringify({ instanceSize: 'medium', instanceName: 'any type' }))
        .expect(202);
      expect(asAnything.body).toMatchObject({ instanceName: 'any type', desiredInstanceType: TYPES.medium });
      const asText = await t.http
        .post(computePath(other))
        .set(auth)
        .set('Content-Type', 'text/plain')
        .send(JSON.stringify({ instanceSize: 'DC-LARGE', instanceName: 'text' }))
        .expect(202);
      expect(asText.body).toMatchObject({ instanceName: 'text', desiredInstanceType: TYPES.large });
      await waitForInstance(t, auth, slug, other.name, asAnything.body.instanceId, 'READY');
      await waitForInstance(t, auth, slug, other.name, asText.body.instanceId, 'READY');
      expect(await connectionLimit(t, other.id)).toBe(base + 100 + 200);

      const malformed = await t.http
        .post(computePath(other))
        .set(auth)
        .set('Content-Type', 'text/plain')
        .send('{"instanceSize": ')
        .expect(400);
      expect(malformed.body).toEqual({ errorCode: 'bad_request', message: 'Malformed JSON body', statusCode: 400 });
    });

    it('refuses an unknown size with 400 listing the allowed values, and bad names, and records nothing', async () => {
      const fresh = await createReadyDatabase(t, auth, slug);
      const unknownSize = await t.http
        .post(computePath(fresh))
        .set(auth)
        .send({ instanceSize: 'dc-huge', instanceName: 'x' })
        .expect(400);
      expect(unknownSize.body).toEqual({
        errorCode: 'bad_request',
        message:
          'instanceSize "dc-huge" is not a compute type; use one of dc-small (small), dc-medium (medium), dc-large (large), dc-xlarge (xlarge)',
        statusCode: 400,
      });
      const cases: [object, RegExp][] = [
        [{ instanceSize: 'dc-small', instanceName: '' }, /instanceName must be 1 to 512 characters long/],
        [{ instanceSize: 'dc-small', instanceName: 'n'.repeat(513) }, /instanceName must be 1 to 512 characters long/],
        [{ instanceSize: 'dc-small' }, /instanceName/],
        [{ instanceName: 'x' }, /instanceSize/],
        [{ instanceSize: '', instanceName: 'x' }, /instanceSize must not be empty/],
        [{ instanceSize: 7, instanceName: 'x' }, /instanceSize must be a string/],
        [{ instanceSize: 'dc-small', instanceName: 'x', extra: true }, /property extra should not exist/],
        // PostgreSQL text cannot hold NUL: refused at the edge, not a 500 from the insert.
        [{ instanceSize: 'dc-small', instanceName: 'a\u0000b' }, /instanceName must not contain NUL characters/],
      ];
      for (const [body, message] of cases) {
        const res = await t.http.post(computePath(fresh)).set(auth).send(body).expect(400);
        expect(res.body).toEqual({
          errorCode: 'bad_request',
          message: expect.stringMatching(message),
          statusCode: 400,
        });
      }
      const [{ count }] = await t.dataSource.query(
        'SELECT count(*)::int AS count FROM compute_instances WHERE database_id = $1',
        [fresh.id],
      );
      expect(count).toBe(0);
      expect(await connectionLimit(t, fresh.id)).toBe(base);
    });

    it('accepts a 512-character name', async () => {
      const name = 'n'.repeat(512);
      const res = await t.http.post(computePath(db)).set(auth).send({ instanceSize: 'small', instanceName: name });
      expect(res.status).toBe(202);
      expect(res.body.instanceName).toBe(name);
      await waitForInstance(t, auth, slug, db.name, res.body.instanceId, 'READY');
    });

    it('answers 404 for a database that does not exist', async () => {
      const res = await t.http
        .post(`/workspaces/${slug}/databases/no_such_db/compute`)
        .set(auth)
        .send({ instanceSize: 'dc-small', instanceName: 'x' })
        .expect(404);
      expect(res.body).toEqual({
        errorCode: 'entity_not_found',
        message: `No database named no_such_db in workspace ${slug}`,
        statusCode: 404,
      });
    });
  });

  describe('read', () => {
    it('describes one instance as a single object, the same as in the list; unknown ids are 404', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const ready = await createReadyInstance(db, 'dc-small');
      const one = await t.http.get(computePath(db, ready.instanceId)).set(auth).expect(200);
      expect(Array.isArray(one.body)).toBe(false);
      expect(one.body).toEqual(ready);
      const list = await t.http.get(computePath(db)).set(auth).expect(200);
      expect(list.body).toEqual([ready]);

      for (const id of [UNKNOWN_ID, 'not-an-id']) {
        const res = await t.http.get(computePath(db, id)).set(auth).expect(404);
        expect(res.body).toEqual({
          errorCode: 'entity_not_found',
          message: `No compute instance ${id} in database ${db.name}`,
          statusCode: 404,
        });
      }
      // An instance of another database of the workspace is not found through this one.
      const other = await createReadyDatabase(t, auth, slug);
      await t.http.get(computePath(other, ready.instanceId)).set(auth).expect(404);
    });

    it('lists the instances that are not deleted without a window, and every instance active in a window', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const kept = await createReadyInstance(db, 'dc-small');
      const gone = await createReadyInstance(db, 'dc-medium');
      await t.http.delete(computePath(db, gone.instanceId)).set(auth).expect(202);
      await waitForInstance(t, auth, slug, db.name, gone.instanceId, 'TERMINATED');
      const { terminated } = await instanceRow(t, gone.instanceId);
      const ids = (res: { body: InstanceBody[] }) => res.body.map((i) => i.instanceId);

      expect(ids(await t.http.get(computePath(db)).set(auth).expect(200))).toEqual([kept.instanceId]);

      const before = new Date(Date.parse(kept.created) - 60000).toISOString();
      const after = new Date(terminated!.getTime() + 1000).toISOString();
      const both = await t.http.get(computePath(db)).query({ start: before }).set(auth).expect(200);
      expect(ids(both)).toEqual([kept.instanceId, gone.instanceId]);
      expect(both.body[1]).toMatchObject({ status: 'TERMINATED', deleted: expect.stringMatching(ISO) });
      // The terminated one was not active after its termination; nothing was active before creation.
      expect(ids(await t.http.get(computePath(db)).query({ start: after }).set(auth).expect(200))).toEqual([
        kept.instanceId,
      ]);
      expect(ids(await t.http.get(computePath(db)).query({ end: before }).set(auth).expect(200))).toEqual([]);
      expect(ids(await t.http.get(computePath(db)).query({ start: before, end: after }).set(auth).expect(200))).toEqual(
        [kept.instanceId, gone.instanceId],
      );
    });

    it('refuses a window that is not ISO 8601 with a time zone, or ends before it starts', async () => {
      const MUST_BE_DATE_TIME =
        'must be an ISO 8601 date-time with a time zone, from 1970 to 9999 (UTC), e.g. 2025-03-01T12:00:00Z';
      const db = await createReadyDatabase(t, auth, slug);
      const cases: [Record<string, string>, string][] = [
        [{ start: 'yesterday' }, `start ${MUST_BE_DATE_TIME}`],
        [{ end: '2025-13-45T00:00:00Z' }, `end ${MUST_BE_DATE_TIME}`],
        // Without a zone the moment would depend on the server's local time.
        [{ start: '2025-01-31T12:00:00' }, `start ${MUST_BE_DATE_TIME}`],
        [{ start: '2025-02-01T00:00:00Z', end: '2025-01-01T00:00:00Z' }, 'start must not be after end'],
      ];
      for (const [query, message] of cases) {
        const res = await t.http.get(computePath(db)).query(query).set(auth).expect(400);
        expect(res.body).toEqual({ errorCode: 'bad_request', message, statusCode: 400 });
      }
    });
  });

  describe('update', () => {
    it('resizes through RESIZING to READY: 202 with the database and its parent, a new usage period at the new size, the new limit on the data plane', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const ready = await createReadyInstance(db, 'dc-small');
      const [first] = await periodsOf(t, ready.instanceId);

      const res = await t.http
        .put(computePath(db, ready.instanceId))
        .set(auth)
        .send({ instanceSize: 'dc-large' })
        .expect(202);
      expect(res.body).toEqual({
        id: db.id,
        name: db.name,
        workspace: expect.objectContaining({ id: workspaceId, slug }),
        status: 'READY',
        region: 'AWS_US_WEST_2',
        expandable: false,
        sharded: false,
        created: expect.stringMatching(ISO),
        apiHost: db.apiHost,
        dbHost: db.dbHost,
        parent: { id: db.id, name: db.name },
      });
      expect((await instanceRow(t, ready.instanceId)).desired_instance_type_id).toBe('dc-large');

      const resized = await eventually(async () => {
        const body = await waitForInstance(t, auth, slug, db.name, ready.instanceId, 'READY');
        return body.instanceType.id === 'dc-large' ? body : null;
      });
      expect(resized).toMatchObject({ instanceType: TYPES.large, desiredInstanceType: TYPES.large });
      expect(await connectionLimit(t, db.id)).toBe(base + 200);
      const periods = await periodsOf(t, ready.instanceId);
      expect(periods).toHaveLength(2);
      expect(periods[0]).toMatchObject({ id: first.id, instance_type_id: 'dc-small', ended_at: expect.any(Date) });
      expect(periods[1]).toMatchObject({
        instance_type_id: 'dc-large',
        compute_size: 'large',
        vcpus: 8,
        hourly_cost: '0.4000',
        ended_at: null,
      });
      expect(periods[1].started_at.getTime()).toBe(periods[0].ended_at!.getTime());
    });

    it('shows the instance RESIZING while the data plane works, at its old size with the new one desired', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const ready = await createReadyInstance(db, 'dc-small');
      const dataPlane = t.app.get(DataPlane);
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const apply = dataPlane.setConnectionLimit.bind(dataPlane);
      const spy = jest.spyOn(dataPlane, 'setConnectionLimit').mockImplementation(async (...args) => {
        await gate;
        return apply(...args);
      });
      try {
        await t.http.put(computePath(db, ready.instanceId)).set(auth).send({ instanceSize: 'medium' }).expect(202);
        const resizing = await waitForInstance(t, auth, slug, db.name, ready.instanceId, 'RESIZING');
        expect(resizing).toMatchObject({ instanceType: TYPES.small, desiredInstanceType: TYPES.medium });
        expect(await connectionLimit(t, db.id)).toBe(base + 50);
      } finally {
        release();
        spy.mockRestore();
      }
      const done = await eventually(async () => {
        const body = await waitForInstance(t, auth, slug, db.name, ready.instanceId, 'READY');
        return body.instanceType.id === 'dc-medium' ? body : null;
      });
      expect(done.desiredInstanceType).toEqual(TYPES.medium);
      expect(await connectionLimit(t, db.id)).toBe(base + 100);
    });

    it('renames at once (200) without touching the size or the usage periods', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const ready = await createReadyInstance(db, 'dc-small');
      const periodsBefore = await periodsOf(t, ready.instanceId);
      const res = await t.http
        .put(computePath(db, ready.instanceId))
        .set(auth)
        .set('Content-Type', '*/*')
        .send(JSON.stringify({ instanceName: 'renamed' }))
        .expect(200);
      expect(res.body).toMatchObject({ id: db.id, name: db.name, parent: { id: db.id, name: db.name } });
      const after = await t.http.get(computePath(db, ready.instanceId)).set(auth).expect(200);
      expect(after.body).toMatchObject({ instanceName: 'renamed', status: 'READY', instanceType: TYPES.small });
      expect(await periodsOf(t, ready.instanceId)).toEqual(periodsBefore);
      // Asking for the size it already runs at changes nothing either.
      await t.http.put(computePath(db, ready.instanceId)).set(auth).send({ instanceSize: 'small' }).expect(200);
      expect(await periodsOf(t, ready.instanceId)).toEqual(periodsBefore);
    });

    it('refuses an empty update, an unknown size, a bad name and JSON null (400), and unknown instances (404)', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const ready = await createReadyInstance(db, 'dc-small');
      const bad: [object, RegExp][] = [
        [{}, /^Nothing to update: give instanceSize and\/or instanceName$/],
        [{ instanceSize: 'tiny' }, /^instanceSize "tiny" is not a compute type; use one of dc-small \(small\)/],
        [{ instanceName: '' }, /instanceName must be 1 to 512 characters long/],
        [{ instanceName: 'x'.repeat(513) }, /instanceName must be 1 to 512 characters long/],
        [{ instanceName: '\u0000' }, /instanceName must not contain NUL characters/],
        // JSON null is not "leave it as it is": an optional field is either omitted or a value.
        [{ instanceSize: null }, /\binstanceSize must be a string\b/],
        [{ instanceName: null }, /\binstanceName must be a string\b/],
        [{ instanceSize: null, instanceName: 'renamed' }, /\binstanceSize must be a string\b/],
        [{ instanceSize: 'dc-medium', instanceName: null }, /\binstanceName must be a string\b/],
      ];
      for (const [body, message] of bad) {
        const res = await t.http.put(computePath(db, ready.instanceId)).set(auth).send(body).expect(400);
        expect(res.body).toEqual({
          errorCode: 'bad_request',
          message: expect.stringMatching(message),
          statusCode: 400,
        });
      }
      expect(await instanceRow(t, ready.instanceId)).toMatchObject({
        name: ready.instanceName,
        desired_instance_type_id: 'dc-small',
      });
      const missing = await t.http.put(computePath(db, UNKNOWN_ID)).set(auth).send({ instanceName: 'x' }).expect(404);
      expect(missing.body.errorCode).toBe('entity_not_found');
    });
  });

  describe('delete', () => {
    it('removes the instance from the list at once (202 with the database) and closes its period then; terminates it later: default limit restored', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const ready = await createReadyInstance(db, 'dc-medium');
      expect(await connectionLimit(t, db.id)).toBe(base + 100);

      const res = await t.http.delete(computePath(db, ready.instanceId)).set(auth).expect(202);
      expect(res.body).toEqual({
        id: db.id,
        name: db.name,
        workspace: expect.objectContaining({ id: workspaceId, slug }),
        status: 'READY',
        region: 'AWS_US_WEST_2',
        expandable: false,
        sharded: false,
        created: expect.stringMatching(ISO),
        apiHost: db.apiHost,
        dbHost: db.dbHost,
      });
      expect((await t.http.get(computePath(db)).set(auth).expect(200)).body).toEqual([]);
      const row = await instanceRow(t, ready.instanceId);
      expect(row.deleted).not.toBeNull();
      // Billed up to the delete: its period is closed as the delete is accepted.
      expect((await periodsOf(t, ready.instanceId)).map((p) => p.ended_at)).toEqual([row.deleted]);

      const terminated = await waitForInstance(t, auth, slug, db.name, ready.instanceId, 'TERMINATED');
      expect(terminated.deleted).toBe(row.deleted!.toISOString());
      const final = await instanceRow(t, ready.instanceId);
      expect(final).toMatchObject({ status: 'TERMINATED', terminated: expect.any(Date), last_error: null });
      const periods = await periodsOf(t, ready.instanceId);
      expect(periods).toHaveLength(1);
      expect(periods[0].ended_at).toEqual(row.deleted);
      expect(final.terminated!.getTime()).toBeGreaterThanOrEqual(row.deleted!.getTime());
      expect(await connectionLimit(t, db.id)).toBe(base);

      // Deleting again answers the database (200: nothing is pending); a deleted instance cannot be changed.
      const again = await t.http.delete(computePath(db, ready.instanceId)).set(auth).expect(200);
      expect(again.body).toEqual(res.body);
      const change = await t.http
        .put(computePath(db, ready.instanceId))
        .set(auth)
        .send({ instanceName: 'x' })
        .expect(409);
      expect(change.body).toEqual({
        errorCode: 'db_status_failure',
        message: `Compute instance ${ready.instanceId} is deleted and cannot be changed`,
        statusCode: 409,
      });
      await t.http.delete(computePath(db, UNKNOWN_ID)).set(auth).expect(404);
    });

    it("takes back only the deleted instance's connections when others keep running", async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const a = await createReadyInstance(db, 'dc-small');
      const b = await createReadyInstance(db, 'dc-xlarge');
      expect(await connectionLimit(t, db.id)).toBe(base + 450);
      await t.http.delete(computePath(db, b.instanceId)).set(auth).expect(202);
      await waitForInstance(t, auth, slug, db.name, b.instanceId, 'TERMINATED');
      expect(await connectionLimit(t, db.id)).toBe(base + 50);
      expect((await instanceRow(t, a.instanceId)).status).toBe('READY');
    });

    it('answers 409 to a resize that arrives while the instance is being deleted, and the deletion stands', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const ready = await createReadyInstance(db, 'dc-small');
      // The delete's update sleeps with the row locked: the resize arrives during it.
      const [deleted, resize] = await withSlowRows(
        t.dataSource,
        {
          table: 'compute_instances',
          on: 'UPDATE',
          when: `NEW.id = '${ready.instanceId}'::uuid AND OLD.deleted IS NULL AND NEW.deleted IS NOT NULL`,
          seconds: 0.3,
        },
        async () => {
          const deleting = t.http
            .delete(computePath(db, ready.instanceId))
            .set(auth)
            .then((res) => res);
          await untilAsleep(t.dataSource, 'UPDATE "compute_instances"');
          const resized = await t.http
            .put(computePath(db, ready.instanceId))
            .set(auth)
            .send({ instanceSize: 'dc-large' });
          return [await deleting, resized] as const;
        },
      );
      expect(deleted.status).toBe(202);
      expect(resize.status).toBe(409);
      expect(resize.body).toEqual({
        errorCode: 'db_status_failure',
        message: `Compute instance ${ready.instanceId} is deleted and cannot be changed`,
        statusCode: 409,
      });
      expect(await instanceRow(t, ready.instanceId)).toMatchObject({
        deleted: expect.any(Date),
        desired_instance_type_id: 'dc-small',
      });
      await waitForInstance(t, auth, slug, db.name, ready.instanceId, 'TERMINATED');
      expect(await connectionLimit(t, db.id)).toBe(base);
    });
  });

  describe('a database that is not READY', () => {
    it('keeps the instance PENDING (never claims READY) and lets it be deleted', async () => {
      const name = `eu_${unique()}`;
      const created = await t.http
        .post(`/workspaces/${slug}/databases`)
        .set(auth)
        .send({ databaseName: name, region: 'AWS_EU_CENTRAL_1' })
        .expect(201);
      expect(created.body.status).toBe('REQUESTED');
      const instance = await createInstance({ name }, 'dc-small');
      expect(instance.status).toBe('PENDING');

      await expect(t.app.get(ComputeLifecycle).converge(instance.instanceId)).rejects.toThrow(
        `waiting for database ${name} to be READY (it is REQUESTED)`,
      );
      expect(await instanceRow(t, instance.instanceId)).toMatchObject({
        status: 'PENDING',
        instance_type_id: null,
        last_error: `waiting for database ${name} to be READY (it is REQUESTED)`,
      });
      expect(await periodsOf(t, instance.instanceId)).toEqual([]);
      const shown = await t.http.get(computePath({ name }, instance.instanceId)).set(auth).expect(200);
      expect(shown.body.status).toBe('PENDING');

      await t.http.delete(computePath({ name }, instance.instanceId)).set(auth).expect(202);
      await waitForInstance(t, auth, slug, name, instance.instanceId, 'TERMINATED');
      expect(await periodsOf(t, instance.instanceId)).toEqual([]);
    });
  });

  describe('lifecycle jobs', () => {
    it('runs the lifecycle job twice harmlessly', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const ready = await createReadyInstance(db, 'dc-small');
      const lifecycle = t.app.get(ComputeLifecycle);
      const before = { row: await instanceRow(t, ready.instanceId), periods: await periodsOf(t, ready.instanceId) };
      await lifecycle.converge(ready.instanceId);
      await lifecycle.converge(ready.instanceId);
      expect({ row: await instanceRow(t, ready.instanceId), periods: await periodsOf(t, ready.instanceId) }).toEqual(
        before,
      );
      expect(await connectionLimit(t, db.id)).toBe(base + 50);

      await t.http.delete(computePath(db, ready.instanceId)).set(auth).expect(202);
      await waitForInstance(t, auth, slug, db.name, ready.instanceId, 'TERMINATED');
      const terminated = { row: await instanceRow(t, ready.instanceId), periods: await periodsOf(t, ready.instanceId) };
      await lifecycle.converge(ready.instanceId);
      await lifecycle.converge(ready.instanceId);
      expect({ row: await instanceRow(t, ready.instanceId), periods: await periodsOf(t, ready.instanceId) }).toEqual(
        terminated,
      );
      expect(await connectionLimit(t, db.id)).toBe(base);
    });

    it("applies the envelopes of one database's instances one at a time: a run that finds another applying refuses and changes nothing", async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const ready = await createReadyInstance(db, 'dc-small');
      expect(await connectionLimit(t, db.id)).toBe(base + 50);
      // A resize whose job has not run yet (no job races the runs below).
      await t.dataSource.query("UPDATE compute_instances SET desired_instance_type_id = 'dc-large' WHERE id = $1", [
        ready.instanceId,
      ]);
      const lifecycle = t.app.get(ComputeLifecycle);
      const { server_id: server, physical_name: physical } = await databaseRow(t, db.id);
      // Another run (of another instance of the database) holds the database's envelope turn.
      const held = await t.app.get(DataPlane).exclusively(server!, `compute-envelope:${physical}`, async () => {
        await expect(lifecycle.converge(ready.instanceId)).rejects.toThrow(
          "another run is applying this database's envelope; will retry",
        );
        expect(await connectionLimit(t, db.id)).toBe(base + 50);
        expect(await instanceRow(t, ready.instanceId)).toMatchObject({
          status: 'RESIZING',
          instance_type_id: 'dc-small',
          desired_instance_type_id: 'dc-large',
        });
        return true;
      });
      expect(held).toBe(true);

      // Its turn once the other run is done.
      await lifecycle.converge(ready.instanceId);
      expect(await connectionLimit(t, db.id)).toBe(base + 200);
      expect(await instanceRow(t, ready.instanceId)).toMatchObject({ status: 'READY', instance_type_id: 'dc-large' });
    });

    it('re-enqueues lost jobs in the sweep: an instance recorded without its job is provisioned, a deletion without its job finalized', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      // A crash between commit and enqueue: the row exists, no job does.
      const [{ id }] = await t.dataSource.query(
        `INSERT INTO compute_instances (database_id, name, desired_instance_type_id, status)
         VALUES ($1, 'lost', 'dc-medium', 'PENDING') RETURNING id`,
        [db.id],
      );
      await reconcile(t.app);
      const ready = await waitForInstance(t, auth, slug, db.name, id, 'READY');
      expect(ready.instanceType).toEqual(TYPES.medium);
      expect(await connectionLimit(t, db.id)).toBe(base + 100);

      await t.dataSource.query("UPDATE compute_instances SET deleted = now(), status = 'DELETING' WHERE id = $1", [id]);
      await reconcile(t.app);
      await waitForInstance(t, auth, slug, db.name, id, 'TERMINATED');
      expect(await connectionLimit(t, db.id)).toBe(base);
      expect((await periodsOf(t, id)).every((p) => p.ended_at !== null)).toBe(true);
    });

    it('marks the instance FAILED with the error when the data plane refuses, and retries until it works', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const dataPlane = t.app.get(DataPlane);
      const spy = jest
        .spyOn(dataPlane, 'setConnectionLimit')
        .mockRejectedValue(new Error('injected: permission denied to alter database'));
      let instance: InstanceBody;
      try {
        instance = await createInstance(db, 'dc-small');
        await waitForInstance(t, auth, slug, db.name, instance.instanceId, 'FAILED');
        // (Read the row when it is FAILED: the job keeps retrying meanwhile.)
        const row = await eventually(async () => {
          const r = await instanceRow(t, instance.instanceId);
          return r.status === 'FAILED' ? r : null;
        });
        expect(row).toMatchObject({
          status: 'FAILED',
          instance_type_id: null,
          last_error: 'the data plane refused the connection limit: injected: permission denied to alter database',
        });
        expect(await periodsOf(t, instance.instanceId)).toEqual([]);
        expect(await connectionLimit(t, db.id)).toBe(base);
      } finally {
        spy.mockRestore();
      }
      await reconcile(t.app);
      await waitForInstance(t, auth, slug, db.name, instance.instanceId, 'READY');
      expect((await instanceRow(t, instance.instanceId)).last_error).toBeNull();
      expect(await connectionLimit(t, db.id)).toBe(base + 50);
    });

    it('retries a refused step by itself (the job backs off and runs again)', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const dataPlane = t.app.get(DataPlane);
      const spy = jest
        .spyOn(dataPlane, 'setConnectionLimit')
        .mockRejectedValueOnce(new Error('injected: connection reset'));
      try {
        const instance = await createInstance(db, 'dc-large');
        await waitForInstance(t, auth, slug, db.name, instance.instanceId, 'READY');
        expect(spy.mock.calls.length).toBeGreaterThanOrEqual(2);
      } finally {
        spy.mockRestore();
      }
      expect(await connectionLimit(t, db.id)).toBe(base + 200);
    });
  });

  describe('a database queued for deletion', () => {
    it('keeps its instances running and operable until finalization, which terminates them; they are billed until the deletion was due', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const first = await createReadyInstance(db, 'dc-small');
      await t.http.delete(`/workspaces/${slug}/databases/${db.name}`).set(auth).expect(200);
      expect((await databaseRow(t, db.id)).deleted).not.toBeNull();

      // Operations keep working on the queued database, by its name.
      const listed = await t.http.get(computePath(db)).set(auth).expect(200);
      expect(listed.body.map((i: InstanceBody) => [i.instanceId, i.status])).toEqual([[first.instanceId, 'READY']]);
      expect(listed.body[0].database.deleted).toEqual(expect.stringMatching(ISO));
      const second = await createReadyInstance(db, 'dc-medium');
      expect(await connectionLimit(t, db.id)).toBe(base + 150);
      expect((await periodsOf(t, first.instanceId))[0].ended_at).toBeNull();

      await t.dataSource.query("UPDATE databases SET deletion_due_at = now() - interval '1 second' WHERE id = $1", [
        db.id,
      ]);
      await expect(t.app.get(DatabaseLifecycle).finalize(db.id)).resolves.toBe(true);
      const { finalized, deletion_due_at: due } = await databaseRow(t, db.id);
      for (const instance of [first, second]) {
        const row = await instanceRow(t, instance.instanceId);
        expect(row).toMatchObject({ status: 'TERMINATED', terminated: expect.any(Date), deleted: expect.any(Date) });
        expect(row.terminated!.getTime()).toBeLessThanOrEqual(finalized!.getTime());
        const periods = await periodsOf(t, instance.instanceId);
        expect(periods).toHaveLength(1);
        // Ended when the deletion was due (or as it started, for one started after that).
        expect(periods[0].ended_at!.getTime()).toBe(Math.max(due!.getTime(), periods[0].started_at.getTime()));
      }
      // A late job for a terminated instance changes nothing; the database is gone from the API.
      const before = await instanceRow(t, first.instanceId);
      await t.app.get(ComputeLifecycle).converge(first.instanceId);
      expect(await instanceRow(t, first.instanceId)).toEqual(before);
      await t.http.get(computePath(db)).set(auth).expect(404);
    });

    it('a finalization arriving while an instance is being recorded READY waits for it, then terminates it and closes its period: none is left open, none billed past the due time', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      await t.http.delete(`/workspaces/${slug}/databases/${db.name}`).set(auth).expect(200);
      await t.dataSource.query("UPDATE databases SET deletion_due_at = now() - interval '1 second' WHERE id = $1", [
        db.id,
      ]);
      // Recorded without its job: converged here, by hand.
      const [{ id }] = await t.dataSource.query<{ id: string }[]>(
        `INSERT INTO compute_instances (database_id, name, desired_instance_type_id, status)
         VALUES ($1, $2, 'dc-small', 'PENDING') RETURNING id`,
        [db.id, `ci_${unique()}`],
      );
      // A gate on this instance's READY write: the recording transaction (its rows locked) waits
      // there, on an advisory lock the test holds, until the finalization has come and is waiting too.
      const gate = [7205, Math.floor(Math.random() * 2 ** 30)] as const;
      const name = `gate_ready_${unique()}`;
      await t.dataSource.query(
        `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN PERFORM pg_advisory_xact_lock_shared(${gate[0]}, ${gate[1]}); RETURN NEW; END $$`,
      );
      await t.dataSource.query(
        `CREATE TRIGGER ${name} BEFORE UPDATE ON compute_instances FOR EACH ROW
           WHEN (NEW.id = '${id}'::uuid AND NEW.status = 'READY') EXECUTE FUNCTION ${name}()`,
      );
      const holder = t.dataSource.createQueryRunner();
      await holder.connect();
      let finalized: boolean;
      try {
        await holder.query('SELECT pg_advisory_lock($1, $2)', [...gate]);
        const converging = t.app.get(ComputeLifecycle).converge(id);
        const recorder = await eventually(async () => {
          const [row] = (await holder.query(
            `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = $1 AND objid = $2`,
            [...gate],
          )) as { pid: number }[];
          return row?.pid;
        });
        const finalizing = t.app.get(DatabaseLifecycle).finalize(db.id);
        // The data plane drop is done and the bookkeeping waits for the recording transaction.
        await eventually(async () => {
          const waiting = (await holder.query('SELECT 1 FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))', [
            recorder,
          ])) as unknown[];
          return waiting.length > 0;
        });
        await holder.query('SELECT pg_advisory_unlock($1, $2)', [...gate]);
        await converging;
        finalized = await finalizing;
      } finally {
        await holder.release();
        await t.dataSource.query(`DROP TRIGGER ${name} ON compute_instances`);
        await t.dataSource.query(`DROP FUNCTION ${name}()`);
      }
      expect(finalized).toBe(true);
      const row = await instanceRow(t, id);
      expect(row).toMatchObject({ status: 'TERMINATED', instance_type_id: 'dc-small', terminated: expect.any(Date) });
      // It became READY after its database's deletion was due: its period ends as it starts.
      const periods = await periodsOf(t, id);
      expect(periods.map((p) => [p.instance_type_id, p.ended_at])).toEqual([['dc-small', periods[0].started_at]]);
    });
  });
});

describe('dedicated compute instances per database', () => {
  let t: TestApp;
  let auth: Auth;
  beforeAll(async () => {
    t = await createTestApp({ COMPUTE_MAX_INSTANCES_PER_DATABASE: '2', DATABASE_POOL_TARGET: '0' });
    auth = (await createDeveloperWithToken(t.app)).auth;
  });
  afterAll(() => t.close());

  it('are at most COMPUTE_MAX_INSTANCES_PER_DATABASE, also when asked at once (403 threshold_exceeded); a deleted one frees its place once terminated', async () => {
    const { slug } = await createWorkspace(t, auth);
    const db = await createReadyDatabase(t, auth, slug);
    const path = `/workspaces/${slug}/databases/${db.name}/compute`;
    // Each insert waits 0.3 s in its transaction, after its count: creates that did not take turns
    // would all count none and all be made.
    const answers = await withSlowRows(
      t.dataSource,
      { table: 'compute_instances', on: 'INSERT', when: `NEW.database_id = '${db.id}'::uuid`, seconds: 0.3 },
      () =>
        Promise.all(
          Array.from({ length: 5 }, (_, i) =>
            t.http
              .post(path)
              .set(auth)
              .send({ instanceSize: 'small', instanceName: `ci_${i}` }),
          ),
        ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([202, 202, 403, 403, 403]);
    expect(answers.find((a) => a.status === 403)!.body).toEqual({
      errorCode: 'threshold_exceeded',
      message:
        'A database may have at most 2 dedicated compute instances; delete one first (it counts until it is terminated)',
      statusCode: 403,
    });
    const live = await t.dataSource.query<{ id: string }[]>(
      'SELECT id FROM compute_instances WHERE database_id = $1 AND deleted IS NULL',
      [db.id],
    );
    expect(live).toHaveLength(2);

    // A deleted instance keeps its connections until it is terminated, and its place with them.
    await t.http.delete(`${path}/${live[0].id}`).set(auth).expect(202);
    await eventually(async () => (await instanceRow(t, live[0].id)).terminated !== null);
    await t.http.post(path).set(auth).send({ instanceSize: 'small', instanceName: 'ci_again' }).expect(202);
  });
});

describe('dedicated compute changes per database and day', () => {
  let t: TestApp;
  let auth: Auth;
  beforeAll(async () => {
    t = await createTestApp({ COMPUTE_CHANGES_PER_DATABASE_PER_DAY: '3', DATABASE_POOL_TARGET: '0' });
    auth = (await createDeveloperWithToken(t.app)).auth;
  });
  afterAll(() => t.close());

  it('are at most COMPUTE_CHANGES_PER_DATABASE_PER_DAY creates and resizes in any 24 hours (429 with Retry-After); renames and deletes are never refused', async () => {
    const { slug } = await createWorkspace(t, auth);
    const db = await createReadyDatabase(t, auth, slug);
    const path = `/workspaces/${slug}/databases/${db.name}/compute`;
    // Create, delete, create again, resize: each create and each change of size counts, as each
    // opens a usage period (a billing line) and has the data plane apply an envelope.
    const first = (await t.http.post(path).set(auth).send({ instanceSize: 'small', instanceName: 'a' }).expect(202))
      .body as InstanceBody;
    await t.http.delete(`${path}/${first.instanceId}`).set(auth).expect(202);
    const second = (await t.http.post(path).set(auth).send({ instanceSize: 'small', instanceName: 'b' }).expect(202))
      .body as InstanceBody;
    await t.http.put(`${path}/${second.instanceId}`).set(auth).send({ instanceSize: 'medium' }).expect(202);

    const expectRefused = (res: { status: number; body: unknown; headers: Record<string, string> }) => {
      expect(res.status).toBe(429);
      expect(res.body).toEqual({
        errorCode: 'threshold_exceeded',
        message: expect.stringMatching(
          /^The dedicated compute of this database was created or resized 3 times in the last 24 hours; retry in \d+ seconds$/,
        ),
        statusCode: 429,
      });
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(86_000);
      expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(86_400);
    };
    expectRefused(await t.http.post(path).set(auth).send({ instanceSize: 'small', instanceName: 'c' }));
    expectRefused(await t.http.put(`${path}/${second.instanceId}`).set(auth).send({ instanceSize: 'large' }));
    // Nothing was recorded by the refusals: no third instance, the size asked before still desired.
    const rows = await t.dataSource.query<{ name: string; desired_instance_type_id: string }[]>(
      'SELECT name, desired_instance_type_id FROM compute_instances WHERE database_id = $1 ORDER BY created',
      [db.id],
    );
    expect(rows).toEqual([
      { name: 'a', desired_instance_type_id: 'dc-small' },
      { name: 'b', desired_instance_type_id: 'dc-medium' },
    ]);
    // A rename, a resize to the size already asked and a delete change nothing that counts.
    await t.http.put(`${path}/${second.instanceId}`).set(auth).send({ instanceName: 'renamed' }).expect(200);
    // (200 once READY at that size, 202 while it is still applied)
    expect([200, 202]).toContain(
      (await t.http.put(`${path}/${second.instanceId}`).set(auth).send({ instanceSize: 'medium' })).status,
    );
    // Another database of the workspace has its own.
    const other = await createReadyDatabase(t, auth, slug);
    await t.http
      .post(`/workspaces/${slug}/databases/${other.name}/compute`)
      .set(auth)
      .send({ instanceSize: 'small', instanceName: 'a' })
      .expect(202);

    // A day later the changes have left the window.
    await t.dataSource.query(
      "UPDATE compute_changes SET created = created - interval '25 hours' WHERE database_id = $1",
      [db.id],
    );
    await t.http.put(`${path}/${second.instanceId}`).set(auth).send({ instanceSize: 'large' }).expect(202);
    await t.http.delete(`${path}/${second.instanceId}`).set(auth).expect(202);
  });

  it('counts parallel creates and resizes one by one', async () => {
    const { slug } = await createWorkspace(t, auth);
    const db = await createReadyDatabase(t, auth, slug);
    const path = `/workspaces/${slug}/databases/${db.name}/compute`;
    const made: InstanceBody[] = [];
    for (const name of ['first', 'second']) {
      made.push(
        (await t.http.post(path).set(auth).send({ instanceSize: 'small', instanceName: name }).expect(202)).body,
      );
    }
    // One change left. Each record waits 0.3 s in its transaction, after its count: changes that did
    // not take turns (resizes of two instances lock different rows) would all count two and all pass.
    const answers = await withSlowRows(
      t.dataSource,
      { table: 'compute_changes', on: 'INSERT', when: `NEW.database_id = '${db.id}'::uuid`, seconds: 0.3 },
      () =>
        Promise.all([
          t.http.put(`${path}/${made[0].instanceId}`).set(auth).send({ instanceSize: 'large' }),
          t.http.put(`${path}/${made[1].instanceId}`).set(auth).send({ instanceSize: 'large' }),
          t.http.post(path).set(auth).send({ instanceSize: 'small', instanceName: 'third' }),
        ]),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([202, 429, 429]);
    const [{ n }] = await t.dataSource.query<{ n: string }[]>(
      'SELECT count(*) AS n FROM compute_changes WHERE database_id = $1',
      [db.id],
    );
    expect(Number(n)).toBe(3);
  });

  it('keeps their records for the day only: the reconciler deletes older ones and keeps those that still count', async () => {
    const { slug } = await createWorkspace(t, auth);
    const db = await createReadyDatabase(t, auth, slug);
    await t.http
      .post(`/workspaces/${slug}/databases/${db.name}/compute`)
      .set(auth)
      .send({ instanceSize: 'small', instanceName: 'kept' })
      .expect(202);
    await t.dataSource.query(
      `INSERT INTO compute_changes (database_id, created)
       SELECT $1, now() - interval '25 hours' - g * interval '1 second' FROM generate_series(1, 3) g`,
      [db.id],
    );
    const records = async () =>
      (
        await t.dataSource.query<{ old: string; recent: string }[]>(
          `SELECT count(*) FILTER (WHERE created <= now() - interval '24 hours') AS old,
                  count(*) FILTER (WHERE created > now() - interval '24 hours') AS recent
             FROM compute_changes WHERE database_id = $1`,
          [db.id],
        )
      ).map((r) => ({ old: Number(r.old), recent: Number(r.recent) }))[0];
    // Other specs' passes share this metadata database and may prune them first (a row such a pass
    // is deleting is skipped by this one): wait for none to be left, then check the recent one stays.
    await reconcile(t.app);
    await eventually(async () => (await records()).old === 0);
    expect(await records()).toEqual({ old: 0, recent: 1 });
  });
});
