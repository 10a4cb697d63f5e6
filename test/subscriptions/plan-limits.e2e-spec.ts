import { IsNull } from 'typeorm';
import { DataPlane } from '../../src/data-plane/data-plane.service';
import { DatabaseEntity } from '../../src/databases/database.entity';
import { DatabaseLifecycle } from '../../src/databases/database-lifecycle.service';
import { createReadyDatabase, createWorkspace, databaseRow, unique } from '../databases/support';
import { withSlowRows } from '../support/slow-rows';
import { createDeveloperWithToken, createTestApp, eventually, TestApp } from '../support/test-app';

/** The documented defaults: FREE allows 3 databases and no dedicated compute; PRO is unlimited. */
const DEFAULT_PLANS = {
  PLAN_FREE_MAX_DATABASES: '3',
  PLAN_FREE_DEDICATED_COMPUTE: 'false',
  // The documented default is 10; 2 keeps the spec short.
  PLAN_FREE_MAX_CREDENTIALS_PER_DATABASE: '2',
  DATABASE_POOL_TARGET: '0',
};

describe('plan limits', () => {
  let t: TestApp;
  let auth: { Authorization: string };
  beforeAll(async () => {
    t = await createTestApp(DEFAULT_PLANS);
    auth = (await createDeveloperWithToken(t.app)).auth;
  });
  afterAll(() => t.close());

  const create = (slug: string, name = `pl_${unique()}`, region = 'AWS_US_WEST_2') =>
    t.http.post(`/workspaces/${slug}/databases`).set(auth).send({ databaseName: name, region });
  const liveCount = (workspaceId: string) =>
    t.dataSource.getRepository(DatabaseEntity).countBy({ workspaceId, deleted: IsNull() });

  it('refuses a FREE workspace’s fourth database, regular or sharded, with 403 threshold_exceeded naming the plan and the limit', async () => {
    const ws = await createWorkspace(t, auth);
    for (let i = 0; i < 3; i++) expect((await create(ws.slug)).status).toBe(201);
    const refused = await create(ws.slug);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      errorCode: 'threshold_exceeded',
      message: 'The FREE plan allows 3 databases',
      statusCode: 403,
    });
    // A sharded one too: the plan answers before the region is asked whether it offers sharding
    // (none of the test servers does, which would otherwise be a 400).
    const sharded = await t.http
      .post(`/workspaces/${ws.slug}/databases`)
      .set(auth)
      .send({ databaseName: `pl_${unique()}`, region: 'AWS_US_WEST_2', sharded: true });
    expect({ status: sharded.status, body: sharded.body }).toEqual({ status: 403, body: refused.body });
    expect(await liveCount(ws.id)).toBe(3);
  });

  it('never exceeds the limit when 20 creates arrive at once, in both regions', async () => {
    const ws = await createWorkspace(t, auth);
    // Creates of one region take turns for placement anyway; the two regions' do not. Each insert
    // of a database of this workspace waits 0.3 s inside the create's transaction, after its count:
    // creates that did not take the plan's turn would count the same databases and overfill it.
    const regions = ['AWS_US_WEST_2', 'AWS_EU_CENTRAL_1'];
    const answers = await withSlowRows(
      t.dataSource,
      { table: 'databases', on: 'INSERT', when: `NEW.workspace_id = '${ws.id}'::uuid`, seconds: 0.3 },
      () => Promise.all(Array.from({ length: 20 }, (_, i) => create(ws.slug, undefined, regions[i % 2]))),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(3);
    expect(statuses.filter((s) => s === 403)).toHaveLength(17);
    expect(await liveCount(ws.id)).toBe(3);
  });

  it('lifts the limits at once on PRO, and moving back to FREE deletes nothing but refuses new creates until under the limit', async () => {
    const ws = await createWorkspace(t, auth);
    for (let i = 0; i < 3; i++) await create(ws.slug).expect(201);
    await t.http.put(`/workspaces/${ws.slug}/subscription`).set(auth).send({ level: 'PRO' }).expect(200);
    for (let i = 0; i < 2; i++) expect((await create(ws.slug)).status).toBe(201);
    expect(await liveCount(ws.id)).toBe(5);

    await t.http.put(`/workspaces/${ws.slug}/subscription`).set(auth).send({ level: 'FREE' }).expect(200);
    expect(await liveCount(ws.id)).toBe(5);
    const refused = await create(ws.slug);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe('The FREE plan allows 3 databases');

    const names: string[] = (await t.http.get(`/workspaces/${ws.slug}/databases`).set(auth).expect(200)).body.map(
      (d: { name: string }) => d.name,
    );
    for (const name of names.slice(0, 3))
      await t.http.delete(`/workspaces/${ws.slug}/databases/${name}`).set(auth).expect(200);
    expect(await liveCount(ws.id)).toBe(2);
    expect((await create(ws.slug)).status).toBe(201);
  });

  it('counts databases queued for deletion until they are finalized: a workspace holds at most twice its limit, live and queued together', async () => {
    const ws = await createWorkspace(t, auth);
    const deleteAll = async () => {
      const live: { name: string; id: string }[] = (
        await t.http.get(`/workspaces/${ws.slug}/databases`).set(auth).expect(200)
      ).body;
      for (const d of live) await t.http.delete(`/workspaces/${ws.slug}/databases/${d.name}`).set(auth).expect(200);
      return live.map((d) => d.id);
    };
    for (let i = 0; i < 3; i++) await create(ws.slug).expect(201);
    const first = await deleteAll();
    // Deleting frees the plan's places: three queued and three live is twice the limit.
    for (let i = 0; i < 3; i++) expect((await create(ws.slug)).status).toBe(201);
    await deleteAll();

    // Six queued for deletion still hold their place on their servers for the grace period:
    // create and delete in a loop would otherwise fill the region with them.
    const [{ due }] = await t.dataSource.query<{ due: Date }[]>(
      'SELECT min(deletion_due_at) AS due FROM databases WHERE id = ANY($1)',
      [first],
    );
    const refused = await create(ws.slug);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      errorCode: 'threshold_exceeded',
      message: `The FREE plan allows 3 databases, and as many again queued for deletion (they keep their place until they are finalized); the first of the 6 queued is finalized at ${due.toISOString()}`,
      statusCode: 403,
    });
    expect(await liveCount(ws.id)).toBe(0);

    // A finalization running late (its due time passed) keeps the place until it has run.
    await t.dataSource.query(
      "UPDATE databases SET deletion_due_at = date_trunc('milliseconds', now()) - interval '1 minute' WHERE id = $1",
      [first[0]],
    );
    const late = (await databaseRow(t, first[0])).deletion_due_at!;
    const stillRefused = await create(ws.slug);
    expect(stillRefused.status).toBe(403);
    expect(stillRefused.body.message).toBe(
      `The FREE plan allows 3 databases, and as many again queued for deletion (they keep their place until they are finalized); the first of the 6 queued was due to be finalized at ${late.toISOString()} and is finalized at the next reconciler pass that reaches its server`,
    );

    // Once one is finalized, its place is free again (its finalization waits for its build's turn,
    // as the reconciler's would: a database deleted before it was built is still built).
    await eventually(() =>
      t.app
        .get(DatabaseLifecycle)
        .finalize(first[0])
        .catch(() => false),
    );
    expect((await databaseRow(t, first[0])).finalized).not.toBeNull();
    expect((await create(ws.slug)).status).toBe(201);
    expect((await create(ws.slug)).status).toBe(403);
  });

  it('refuses dedicated compute on FREE with 403 feature_ineligible naming the plan, and allows it on PRO', async () => {
    const ws = await createWorkspace(t, auth);
    const db = await createReadyDatabase(t, auth, ws.slug);
    const body = { instanceName: 'analytics', instanceSize: 'small' };
    const refused = await t.http.post(`/workspaces/${ws.slug}/databases/${db.name}/compute`).set(auth).send(body);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      errorCode: 'feature_ineligible',
      message: 'The FREE plan does not include dedicated compute; change the subscription level to use it',
      statusCode: 403,
    });
    expect(
      Number(
        (await t.dataSource.query('SELECT count(*) AS n FROM compute_instances WHERE database_id = $1', [db.id]))[0].n,
      ),
    ).toBe(0);

    await t.http.put(`/workspaces/${ws.slug}/subscription`).set(auth).send({ level: 'PRO' }).expect(200);
    await t.http.post(`/workspaces/${ws.slug}/databases/${db.name}/compute`).set(auth).send(body).expect(202);
  });

  it('after a change to FREE, lets an instance added on PRO be renamed, resized down or deleted, not resized up', async () => {
    const ws = await createWorkspace(t, auth);
    const db = await createReadyDatabase(t, auth, ws.slug);
    await t.http.put(`/workspaces/${ws.slug}/subscription`).set(auth).send({ level: 'PRO' }).expect(200);
    const compute = `/workspaces/${ws.slug}/databases/${db.name}/compute`;
    const { instanceId } = (
      await t.http.post(compute).set(auth).send({ instanceName: 'analytics', instanceSize: 'medium' }).expect(202)
    ).body as { instanceId: string };
    await t.http.put(`/workspaces/${ws.slug}/subscription`).set(auth).send({ level: 'FREE' }).expect(200);
    const desired = async () =>
      (
        await t.dataSource.query<{ desired_instance_type_id: string }[]>(
          'SELECT desired_instance_type_id FROM compute_instances WHERE id = $1',
          [instanceId],
        )
      )[0].desired_instance_type_id;

    const up = await t.http.put(`${compute}/${instanceId}`).set(auth).send({ instanceSize: 'xlarge' });
    expect(up.status).toBe(403);
    expect(up.body).toEqual({
      errorCode: 'feature_ineligible',
      message:
        'The FREE plan does not include dedicated compute; change the subscription level to use it (an instance may still be resized down, renamed or deleted)',
      statusCode: 403,
    });
    expect(await desired()).toBe('dc-medium');

    await t.http.put(`${compute}/${instanceId}`).set(auth).send({ instanceName: 'renamed' }).expect(200);
    const down = await t.http.put(`${compute}/${instanceId}`).set(auth).send({ instanceSize: 'small' });
    expect(down.status).toBe(202);
    expect(await desired()).toBe('dc-small');
    await t.http.delete(`${compute}/${instanceId}`).set(auth).expect(202);
  });

  it('refuses credentials beyond the plan’s number per database, also when asked at once, and never refuses a rotation with delay 0', async () => {
    const ws = await createWorkspace(t, auth);
    const db = await createReadyDatabase(t, auth, ws.slug);
    const path = `/workspaces/${ws.slug}/databases/${db.name}/credentials`;
    // Each insert of a credential of this database waits 0.3 s inside the create's transaction,
    // after its count: creates that did not take turns would all count none and all be made.
    const answers = await withSlowRows(
      t.dataSource,
      { table: 'credentials', on: 'INSERT', when: `NEW.database_id = '${db.id}'::uuid`, seconds: 0.3 },
      () => Promise.all(Array.from({ length: 5 }, () => t.http.post(path).set(auth).send())),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 403, 403, 403]);
    expect(answers.find((a) => a.status === 403)!.body).toEqual({
      errorCode: 'threshold_exceeded',
      message: 'The FREE plan allows 2 credentials per database',
      statusCode: 403,
    });
    const live = async () =>
      Number(
        (
          await t.dataSource.query('SELECT count(*) AS n FROM credentials WHERE database_id = $1 AND dropped IS NULL', [
            db.id,
          ])
        )[0].n,
      );
    expect(await live()).toBe(2);

    // Over the plan already: refused before any session to the data plane is opened.
    const sessions = jest.spyOn(t.app.get(DataPlane), 'openSession');
    try {
      await t.http.post(path).set(auth).send().expect(403);
      expect(sessions).not.toHaveBeenCalled();
    } finally {
      sessions.mockRestore();
    }

    await t.http.post(`${path}/rotate`).set(auth).send({ delayOldSecretsExpirationHours: 0 }).expect(200);
    await t.http.put(`/workspaces/${ws.slug}/subscription`).set(auth).send({ level: 'PRO' }).expect(200);
    await t.http.post(path).set(auth).send().expect(200);
  });
});
