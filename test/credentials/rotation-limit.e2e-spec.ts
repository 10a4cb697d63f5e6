import { DataPlane } from '../../src/data-plane/data-plane.service';
import { createReadyDatabase, createWorkspace, queryAs, roleExists } from '../databases/support';
import { withSlowRows } from '../support/slow-rows';
import { createDeveloperWithToken, createTestApp, eventually, TestApp } from '../support/test-app';

interface Issued {
  id: string;
  password: string;
}

/**
 * A rotation with a delay keeps the earlier credentials working until they expire: it is refused
 * when more of them would then be working than the plan allows credentials per database, so
 * rotations cannot pile up working roles (each one used to add a role working for up to 30 days).
 */
describe('rotation within the plan’s credentials per database', () => {
  let t: TestApp;
  let auth: { Authorization: string };
  beforeAll(async () => {
    t = await createTestApp({ PLAN_FREE_MAX_CREDENTIALS_PER_DATABASE: '2', DATABASE_POOL_TARGET: '0' });
    auth = (await createDeveloperWithToken(t.app)).auth;
  });
  afterAll(() => t.close());

  async function freshDatabase() {
    const ws = await createWorkspace(t, auth);
    const db = await createReadyDatabase(t, auth, ws.slug);
    return { ws, db, path: `/workspaces/${ws.slug}/databases/${db.name}/credentials` };
  }

  const rotate = (path: string, hours: number) =>
    t.http.post(`${path}/rotate`).set(auth).send({ delayOldSecretsExpirationHours: hours, reason: 'test' });

  /** Credentials of the database whose role still works: not dropped, and not expired yet. */
  const working = async (databaseId: string) =>
    (
      await t.dataSource.query<{ id: string }[]>(
        `SELECT id FROM credentials
          WHERE database_id = $1 AND dropped IS NULL AND NOT pending AND (expires_at IS NULL OR expires_at > now())
          ORDER BY created, id`,
        [databaseId],
      )
    ).map((r) => r.id);
  const rowCount = async (databaseId: string) =>
    Number(
      (await t.dataSource.query('SELECT count(*) AS n FROM credentials WHERE database_id = $1', [databaseId]))[0].n,
    );

  it('refuses (403 threshold_exceeded) a delayed rotation that would leave more earlier credentials working than the plan allows, before any role is made; delay 0 always passes', async () => {
    const { ws, db, path } = await freshDatabase();
    const a = (await t.http.post(path).set(auth).expect(200)).body as Issued;
    const b = (await t.http.post(path).set(auth).expect(200)).body as Issued;

    // a and b stay working for a day: two earlier credentials, within the plan.
    const first = await rotate(path, 24);
    expect(first.status).toBe(200);
    const c = first.body as Issued;
    expect(await working(db.id)).toEqual([a.id, b.id, c.id]);

    // a, b and c would all stay working: three, over the plan's two.
    const rows = await rowCount(db.id);
    const refused = await rotate(path, 720);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      errorCode: 'threshold_exceeded',
      message: expect.stringMatching(/^The FREE plan allows 2 credentials per database/),
      statusCode: 403,
    });
    expect(await rowCount(db.id)).toBe(rows);
    expect(await working(db.id)).toEqual([a.id, b.id, c.id]);
    await expect(queryAs(db.dbHost!, c.id, c.password, 'SELECT 1')).resolves.toHaveLength(1);

    // Delay 0 leaves nothing earlier working: never refused.
    const now = (await rotate(path, 0).expect(200)).body as Issued;
    expect(await working(db.id)).toEqual([now.id]);

    // Moving to PRO (unlimited) lifts the cap at once.
    await t.http.put(`/workspaces/${ws.slug}/subscription`).set(auth).send({ level: 'PRO' }).expect(200);
    for (let i = 0; i < 3; i += 1) await rotate(path, 24).expect(200);
    expect(await working(db.id)).toHaveLength(4);
  });

  it('never leaves more than the plan’s number working besides the newest, however many delayed rotations come', async () => {
    const { db, path } = await freshDatabase();
    await t.http.post(path).set(auth).expect(200);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i += 1) statuses.push((await rotate(path, 720)).status);
    expect(statuses).toEqual([200, 200, 403, 403, 403]);
    expect(await working(db.id)).toHaveLength(3);
  });

  it('counts per database, whatever the groups: rotations of other tenants cannot pile up working roles; a delay-0 rotation replacing a working one always passes', async () => {
    const { db, path } = await freshDatabase();
    const rotateGroup = (tenantId: string, hours: number) =>
      t.http
        .post(`${path}/rotate`)
        .query({ tenantId })
        .set(auth)
        .send({ delayOldSecretsExpirationHours: hours, reason: 'test' });
    const a = (await t.http.post(path).query({ tenantId: 'a' }).set(auth).expect(200)).body as Issued;
    const b = (await t.http.post(path).query({ tenantId: 'b' }).set(auth).expect(200)).body as Issued;

    // a stays working for a day next to b: two besides the new one, within the plan.
    const a2 = (await rotateGroup('a', 24).expect(200)).body as Issued;
    expect(await working(db.id)).toEqual([a.id, b.id, a2.id]);

    // b's rotation would keep a, a2 and b working: three, over the plan's two, though b's group alone has one.
    const refused = await rotateGroup('b', 24);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      errorCode: 'threshold_exceeded',
      message: expect.stringMatching(/^The FREE plan allows 2 credentials per database/),
      statusCode: 403,
    });
    // A rotation of a tenant with no credential adds one next to the three: refused, even with delay 0.
    expect((await rotateGroup('c', 0)).status).toBe(403);
    expect(await working(db.id)).toEqual([a.id, b.id, a2.id]);

    // Delay 0 replacing b's working credential adds none: it passes.
    const b2 = (await rotateGroup('b', 0).expect(200)).body as Issued;
    expect(await working(db.id)).toEqual([a.id, a2.id, b2.id]);
    await expect(queryAs(db.dbHost!, b.id, b.password, 'SELECT 1')).rejects.toThrow(/password authentication failed/);
    await expect(queryAs(db.dbHost!, a.id, a.password, 'SELECT 1')).resolves.toHaveLength(1);
  });

  it('counts the creates still making their roles: delayed rotations meanwhile cannot take the database past the plan when they finish', async () => {
    const { db, path } = await freshDatabase();
    // Both creates' roles are held in the making (a slow server) until the rotations are answered.
    const dataPlane = t.app.get(DataPlane);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let making = 0;
    const slow = jest.spyOn(dataPlane, 'createLoginRole').mockImplementation(async (...args) => {
      if ((making += 1) <= 2) await released;
      await DataPlane.prototype.createLoginRole.apply(dataPlane, args);
    });
    try {
      const creates = [t.http.post(path).set(auth), t.http.post(path).set(auth)].map((r) => r.then((res) => res));
      await eventually(() => Promise.resolve(making === 2));
      const rotations: number[] = [];
      for (let i = 0; i < 3; i += 1) rotations.push((await rotate(path, 24)).status);
      release();
      expect((await Promise.all(creates)).map((r) => r.status)).toEqual([200, 200]);
      // The two creates and the first rotation's credential: the plan's two and the newest.
      expect(rotations).toEqual([200, 403, 403]);
    } finally {
      release();
      slow.mockRestore();
    }
    expect(await working(db.id)).toHaveLength(3);
  });

  it('decides again in the rotations’ turn: of two delayed rotations that both found room, the second is refused and its role dropped', async () => {
    const { db, path } = await freshDatabase();
    await t.http.post(path).set(auth).expect(200);
    await t.http.post(path).set(auth).expect(200);
    const before = await working(db.id);
    // Each intent waits 0.3 s after its own check: both rotations find the same two earlier
    // credentials before either's bookkeeping runs.
    const answers = await withSlowRows(
      t.dataSource,
      { table: 'credentials', on: 'INSERT', when: `NEW.database_id = '${db.id}'::uuid`, seconds: 0.3 },
      () => Promise.all([rotate(path, 24), rotate(path, 24)]),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([200, 403]);
    const made = answers.find((r) => r.status === 200)!.body as Issued;
    expect(answers.find((r) => r.status === 403)!.body.errorCode).toBe('threshold_exceeded');
    expect(await working(db.id)).toEqual([...before, made.id]);
    // The refused rotation's role was made, then given up: the expiry job drops it.
    const [abandoned] = await t.dataSource.query<{ id: string }[]>(
      'SELECT id FROM credentials WHERE database_id = $1 AND id <> ALL($2::uuid[])',
      [db.id, [...before, made.id]],
    );
    expect(abandoned).toBeDefined();
    await eventually(async () => !(await roleExists(abandoned.id)));
    await eventually(
      async () =>
        (await t.dataSource.query('SELECT dropped FROM credentials WHERE id = $1', [abandoned.id]))[0].dropped !== null,
    );
  });
});
