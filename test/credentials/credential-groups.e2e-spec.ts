import { createDeveloperWithToken, createTestApp, TestApp } from '../support/test-app';
import { Auth, DatabaseBody, createReadyDatabase, createWorkspace, onDataPlane, queryAs } from '../databases/support';

interface Issued {
  id: string;
  password: string;
  tenant?: string;
  internal: boolean;
}

/**
 * `tenantId` and `internal` (query parameters of createCredential, listCredentials and
 * rotateCredential) put a credential in a group: its tenant, or none, and whether it is internal.
 * They are recorded and answered, they filter the list, and a rotation replaces its group's
 * credentials only.
 */
describe('credential groups: tenantId and internal', () => {
  let t: TestApp;
  let auth: Auth;
  let slug: string;
  beforeAll(async () => {
    t = await createTestApp();
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
  });
  afterAll(() => t.close());

  const pathOf = (db: { name: string }) => `/workspaces/${slug}/databases/${db.name}/credentials`;

  async function issue(db: { name: string }, query: Record<string, string> = {}): Promise<Issued> {
    return (await t.http.post(pathOf(db)).query(query).set(auth).expect(200)).body as Issued;
  }

  async function rotate(db: { name: string }, query: Record<string, string>, hours: number): Promise<Issued> {
    const res = await t.http
      .post(`${pathOf(db)}/rotate`)
      .query(query)
      .set(auth)
      .send({ delayOldSecretsExpirationHours: hours, reason: 'group rotation' })
      .expect(200);
    return res.body as Issued;
  }

  const row = async (id: string) =>
    (
      await t.dataSource.query<{ tenant: string | null; internal: boolean; expires_at: Date | null }[]>(
        'SELECT tenant, internal, expires_at FROM credentials WHERE id = $1',
        [id],
      )
    )[0];

  const validUntil = (role: string) =>
    onDataPlane(async (c) => {
      const { rows } = await c.query('SELECT rolvaliduntil FROM pg_roles WHERE rolname = $1', [role]);
      return (rows[0] as { rolvaliduntil: Date | null } | undefined)?.rolvaliduntil;
    });

  /** The credential logs in, its row has no expiry, and its role no VALID UNTIL. */
  async function untouched(db: DatabaseBody, cred: Issued): Promise<void> {
    await expect(queryAs(db.dbHost!, cred.id, cred.password, 'SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
    expect((await row(cred.id)).expires_at).toBeNull();
    expect(await validUntil(cred.id)).toBeNull();
  }

  const refused = (db: DatabaseBody, cred: Issued) =>
    expect(queryAs(db.dbHost!, cred.id, cred.password, 'SELECT 1')).rejects.toThrow(/password authentication failed/);

  describe('create', () => {
    let db: DatabaseBody;
    beforeAll(async () => {
      db = await createReadyDatabase(t, auth, slug);
    });

    it('records tenantId and internal on the credential and answers them; the credential logs in', async () => {
      const res = await t.http.post(pathOf(db)).query({ tenantId: 'tenant-a', internal: 'true' }).set(auth).expect(200);
      expect(res.body).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        database: expect.objectContaining({ id: db.id, name: db.name }),
        tenant: 'tenant-a',
        internal: true,
        password: expect.any(String),
        created: expect.any(String),
      });
      const cred = res.body as Issued;
      expect(await row(cred.id)).toEqual({ tenant: 'tenant-a', internal: true, expires_at: null });
      await expect(queryAs(db.dbHost!, cred.id, cred.password, 'SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
    });

    it('with internal=false and no tenantId: no tenant (left out of the answer), not internal', async () => {
      const cred = await issue(db, { internal: 'false' });
      expect(cred).not.toHaveProperty('tenant');
      expect(cred.internal).toBe(false);
      expect(await row(cred.id)).toEqual({ tenant: null, internal: false, expires_at: null });
      const tenantOnly = await issue(db, { tenantId: 'tenant-b' });
      expect(tenantOnly).toMatchObject({ tenant: 'tenant-b', internal: false });
      expect(await row(tenantOnly.id)).toEqual({ tenant: 'tenant-b', internal: false, expires_at: null });
    });
  });

  describe('list', () => {
    it('items carry tenant (when set) and internal; internal ones only with internal=true; tenantId lists that tenant only', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const plain = await issue(db);
      const a = await issue(db, { tenantId: 'a' });
      const b = await issue(db, { tenantId: 'b' });
      const internal = await issue(db, { internal: 'true' });
      const internalA = await issue(db, { tenantId: 'a', internal: 'true' });

      const list = async (query: Record<string, string> = {}) =>
        (await t.http.get(pathOf(db)).query(query).set(auth).expect(200)).body as Record<string, unknown>[];

      const all = await list();
      const summary = expect.objectContaining({ id: db.id, name: db.name });
      expect(all).toEqual([
        { id: plain.id, database: summary, internal: false, created: expect.any(String) },
        { id: a.id, database: summary, tenant: 'a', internal: false, created: expect.any(String) },
        { id: b.id, database: summary, tenant: 'b', internal: false, created: expect.any(String) },
      ]);
      expect(all.every((item) => !('password' in item))).toBe(true);

      const ids = (items: Record<string, unknown>[]) => items.map((item) => item.id);
      expect(ids(await list({ internal: 'false' }))).toEqual([plain.id, a.id, b.id]);
      expect(ids(await list({ tenantId: 'a' }))).toEqual([a.id]);
      expect(ids(await list({ tenantId: 'a', internal: 'false' }))).toEqual([a.id]);
      expect(ids(await list({ tenantId: 'nobody' }))).toEqual([]);
      expect(await list({ internal: 'true' })).toEqual([
        { id: internal.id, database: summary, internal: true, created: expect.any(String) },
        { id: internalA.id, database: summary, tenant: 'a', internal: true, created: expect.any(String) },
      ]);
      expect(ids(await list({ tenantId: 'a', internal: 'true' }))).toEqual([internalA.id]);
    });
  });

  describe('rotate', () => {
    it("replaces only its group's credentials: another tenant's, the untenanted and the internal ones keep working with no expiry", async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const plain = await issue(db);
      const a = await issue(db, { tenantId: 'a' });
      const b = await issue(db, { tenantId: 'b' });
      const internal = await issue(db, { internal: 'true' });
      const internalA = await issue(db, { tenantId: 'a', internal: 'true' });

      const freshA = await rotate(db, { tenantId: 'a' }, 0);
      expect(freshA).toMatchObject({ tenant: 'a', internal: false });
      expect(await row(freshA.id)).toEqual({ tenant: 'a', internal: false, expires_at: null });
      await refused(db, a);
      await expect(queryAs(db.dbHost!, freshA.id, freshA.password, 'SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
      for (const other of [plain, b, internal, internalA]) await untouched(db, other);

      // No tenantId: the credentials of no tenant (not every tenant's).
      const freshPlain = await rotate(db, {}, 0);
      expect(freshPlain).not.toHaveProperty('tenant');
      expect(freshPlain.internal).toBe(false);
      await refused(db, plain);
      for (const other of [freshA, b, internal, internalA]) await untouched(db, other);

      // internal=true: the internal credentials of no tenant only.
      const freshInternal = await rotate(db, { internal: 'true' }, 0);
      expect(freshInternal).toMatchObject({ internal: true });
      expect(freshInternal).not.toHaveProperty('tenant');
      expect(await row(freshInternal.id)).toEqual({ tenant: null, internal: true, expires_at: null });
      await refused(db, internal);
      for (const other of [freshA, freshPlain, b, internalA]) await untouched(db, other);

      // Listed without an expiry: what works for good (the replaced ones stay listed, expired, until dropped).
      const { body: listed } = await t.http.get(pathOf(db)).set(auth).expect(200);
      const lasting = (listed as { id: string; expires?: string }[]).filter((c) => !c.expires).map((c) => c.id);
      expect(lasting).toEqual([b.id, freshA.id, freshPlain.id]);
    });

    it('with a delay, schedules the expiry of its group only', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const a = await issue(db, { tenantId: 'a' });
      const b = await issue(db, { tenantId: 'b' });
      const internalB = await issue(db, { tenantId: 'b', internal: 'true' });
      const before = Date.now();
      const freshB = await rotate(db, { tenantId: 'b' }, 24);
      expect(freshB).toMatchObject({ tenant: 'b', internal: false });
      const expiry = (await row(b.id)).expires_at!;
      expect(new Date(expiry).getTime()).toBeGreaterThanOrEqual(before + 24 * 3600 * 1000 - 1000);
      expect((await validUntil(b.id))?.getTime()).toBe(new Date(expiry).getTime());
      // b works until then; the others are not scheduled at all.
      await expect(queryAs(db.dbHost!, b.id, b.password, 'SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
      for (const other of [a, internalB, freshB]) await untouched(db, other);
    });
  });

  describe('bad parameters', () => {
    const bad: [string, string][] = [
      ['internal=1', 'internal'],
      ['internal=yes', 'internal'],
      ['internal=TRUE', 'internal'],
      ['internal=', 'internal'],
      ['internal=true&internal=false', 'internal'],
      ['tenantId=', 'tenantId'],
      [`tenantId=${'x'.repeat(201)}`, 'tenantId'],
      ['tenantId=a%00b', 'tenantId'],
      ['tenantId=a&tenantId=b', 'tenantId'],
      ['tenant=a', 'tenant'],
    ];

    it('answer 400 bad_request naming the parameter on create, list and rotate, and make nothing', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      for (const [query, named] of bad) {
        const requests = [
          t.http.post(`${pathOf(db)}?${query}`),
          t.http.get(`${pathOf(db)}?${query}`),
          t.http.post(`${pathOf(db)}/rotate?${query}`).send({ delayOldSecretsExpirationHours: 0 }),
        ];
        for (const request of requests) {
          const res = await request.set(auth);
          expect({ query, status: res.status, body: res.body }).toEqual({
            query,
            status: 400,
            body: { errorCode: 'bad_request', message: expect.stringContaining(named), statusCode: 400 },
          });
        }
      }
      expect(await t.dataSource.query('SELECT id FROM credentials WHERE database_id = $1', [db.id])).toEqual([]);
    });

    it('takes the longest tenantId the column holds', async () => {
      const db = await createReadyDatabase(t, auth, slug);
      const cred = await issue(db, { tenantId: 'x'.repeat(200) });
      expect(cred.tenant).toBe('x'.repeat(200));
    });
  });
});
