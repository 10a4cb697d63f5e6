import { DeveloperKind } from '../../src/developers/developer.entity';
import { withSlowRows } from '../support/slow-rows';
import { createDeveloperWithToken, createTestApp, TestApp } from '../support/test-app';

describe('workspaces', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const unique = () => Math.random().toString(36).slice(2, 8);

  it('creates a workspace with a slug from the name and makes the creator a member', async () => {
    const { developer, auth } = await createDeveloperWithToken(t.app);
    const name = `Acme Prod ${unique()}`;
    const res = await t.http.post('/workspaces').set(auth).send({ name }).expect(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name,
      slug: name.toLowerCase().replace(/ /g, '-'),
      created: expect.any(String),
    });
    const members = await t.dataSource.query('SELECT developer_id FROM workspace_members WHERE workspace_id = $1', [
      res.body.id,
    ]);
    expect(members).toEqual([{ developer_id: developer.id }]);
  });

  it('turns non-ASCII and URL-unsafe characters into hyphens', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const suffix = unique();
    const res = await t.http
      .post('/workspaces')
      .set(auth)
      .send({ name: `Café/Ünï ${suffix}?` })
      .expect(201);
    expect(res.body.slug).toBe(`caf-n-${suffix}`);
  });

  it('reads the create body as JSON whatever its Content-Type (published as */*)', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    for (const type of ['text/plain', '*/*']) {
      const name = `Plain ${unique()}`;
      const res = await t.http.post('/workspaces').set(auth).set('Content-Type', type).send(JSON.stringify({ name }));
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ name, slug: name.toLowerCase().replace(' ', '-') });
      expect(await t.dataSource.query('SELECT name FROM workspaces WHERE id = $1', [res.body.id])).toEqual([{ name }]);
    }
    const malformed = await t.http
      .post('/workspaces')
      .set(auth)
      .set('Content-Type', 'text/plain')
      .send('{name')
      .expect(400);
    expect(malformed.body).toEqual({ errorCode: 'bad_request', message: 'Malformed JSON body', statusCode: 400 });
  });

  it('answers 409 naming the slug when it is taken, case-insensitively', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const other = await createDeveloperWithToken(t.app);
    const name = `Taken ${unique()}`;
    await t.http.post('/workspaces').set(auth).send({ name }).expect(201);
    const res = await t.http.post('/workspaces').set(other.auth).send({ name: name.toUpperCase() }).expect(409);
    expect(res.body).toEqual({
      errorCode: 'duplicate_entity',
      message: expect.stringContaining(name.toLowerCase().replace(' ', '-')),
      statusCode: 409,
    });
  });

  it('lets exactly one of two concurrent creates with the same name succeed', async () => {
    const a = await createDeveloperWithToken(t.app);
    const b = await createDeveloperWithToken(t.app);
    const name = `Race ${unique()}`;
    const results = await Promise.all([
      t.http.post('/workspaces').set(a.auth).send({ name }),
      t.http.post('/workspaces').set(b.auth).send({ name }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
    const rows = await t.dataSource.query('SELECT count(*)::int AS n FROM workspaces WHERE slug = $1', [
      name.toLowerCase().replace(' ', '-'),
    ]);
    expect(rows[0].n).toBe(1);
  });

  it('refuses a name with no ASCII letter or digit, and a too long name', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    for (const name of ['東京', '_', '-_-', '東京_']) {
      const res = await t.http.post('/workspaces').set(auth).send({ name }).expect(400);
      expect(res.body).toMatchObject({ errorCode: 'bad_request', message: expect.stringContaining('ASCII') });
    }
    expect(await t.dataSource.query(`SELECT id FROM workspaces WHERE slug = '_'`)).toEqual([]);
    await t.http
      .post('/workspaces')
      .set(auth)
      .send({ name: 'x'.repeat(101) })
      .expect(400);
    await t.http.post('/workspaces').set(auth).send({}).expect(400);
  });

  it('refuses workspace creation by API developers', async () => {
    const { auth } = await createDeveloperWithToken(t.app, { kind: DeveloperKind.Api });
    const res = await t.http
      .post('/workspaces')
      .set(auth)
      .send({ name: `Robots ${unique()}` })
      .expect(403);
    expect(res.body.errorCode).toBe('forbidden_operation');
  });

  it('lists only the workspaces the caller belongs to and gets one as a single object', async () => {
    const me = await createDeveloperWithToken(t.app);
    const other = await createDeveloperWithToken(t.app);
    const mine1 = (
      await t.http
        .post('/workspaces')
        .set(me.auth)
        .send({ name: `Mine A ${unique()}` })
    ).body;
    const mine2 = (
      await t.http
        .post('/workspaces')
        .set(me.auth)
        .send({ name: `Mine B ${unique()}` })
    ).body;
    await t.http
      .post('/workspaces')
      .set(other.auth)
      .send({ name: `Theirs ${unique()}` })
      .expect(201);
    const list = await t.http.get('/workspaces').set(me.auth).expect(200);
    expect(list.body.map((w: { id: string }) => w.id)).toEqual([mine1.id, mine2.id]);
    const one = await t.http.get(`/workspaces/${mine1.slug}`).set(me.auth).expect(200);
    expect(one.body).toEqual(mine1);
  });

  it('lists every region, each backed by a configured data-plane server', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const ws = (
      await t.http
        .post('/workspaces')
        .set(auth)
        .send({ name: `Regions ${unique()}` })
    ).body;
    const res = await t.http.get(`/workspaces/${ws.slug}/regions`).set(auth).expect(200);
    expect(res.body).toEqual(['AWS_US_WEST_2', 'AWS_EU_CENTRAL_1', 'AZURE_EASTUS']);
  });
});

describe('workspaces per developer', () => {
  let t: TestApp;
  beforeAll(async () => (t = await createTestApp({ WORKSPACES_PER_DEVELOPER: '3' })));
  afterAll(() => t.close());

  it('are at most WORKSPACES_PER_DEVELOPER for a create, also when asked at once (403 threshold_exceeded)', async () => {
    const me = await createDeveloperWithToken(t.app);
    const stamp = Date.now().toString(36);
    // Each membership insert waits 0.3 s in its transaction, after the count: creates that did not
    // take turns would all count none and all be made.
    const answers = await withSlowRows(
      t.dataSource,
      { table: 'workspace_members', on: 'INSERT', when: `NEW.developer_id = '${me.developer.id}'::uuid` },
      () =>
        Promise.all(
          Array.from({ length: 5 }, (_, i) =>
            t.http
              .post('/workspaces')
              .set(me.auth)
              .send({ name: `bounded ${stamp} ${i}` }),
          ),
        ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 201, 403, 403]);
    expect(answers.find((a) => a.status === 403)!.body).toEqual({
      errorCode: 'threshold_exceeded',
      message:
        'A developer may belong to at most 3 workspaces; leave one that has other members, or ask the operator to raise WORKSPACES_PER_DEVELOPER',
      statusCode: 403,
    });
    const [{ n }] = await t.dataSource.query<{ n: number }[]>(
      'SELECT count(*)::int AS n FROM workspace_members WHERE developer_id = $1',
      [me.developer.id],
    );
    expect(n).toBe(3);
  });
});
