import { withSlowRows } from '../support/slow-rows';
import { createDeveloperWithToken, createTestApp, TestApp } from '../support/test-app';

describe('developers of a workspace', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const unique = () => Math.random().toString(36).slice(2, 8);

  async function workspaceWith(...members: Member[]) {
    const [owner, ...rest] = members;
    const ws = (
      await t.http
        .post('/workspaces')
        .set(owner.auth)
        .send({ name: `Team ${unique()}` })
        .expect(201)
    ).body;
    for (const m of rest) {
      await t.dataSource.query('INSERT INTO workspace_members (workspace_id, developer_id) VALUES ($1, $2)', [
        ws.id,
        m.developer.id,
      ]);
    }
    return ws as { id: string; slug: string };
  }

  type Member = { developer: { id: string }; auth: { Authorization: string } };

  /**
   * `x` removes `y` while `y` removes `x`, both past the guard as members. Each removal's delete
   * sleeps, so removals that did not take turns would both count the other and both delete.
   */
  function removeEachOther(ws: { id: string; slug: string }, x: Member, y: Member) {
    return withSlowRows(
      t.dataSource,
      { table: 'workspace_members', on: 'DELETE', when: `OLD.workspace_id = '${ws.id}'::uuid`, seconds: 0.3 },
      () =>
        Promise.all([
          t.http.delete(`/workspaces/${ws.slug}/developers/${y.developer.id}`).set(x.auth),
          t.http.delete(`/workspaces/${ws.slug}/developers/${x.developer.id}`).set(y.auth),
        ]),
    );
  }

  it('lists the members, showing only workspaces the caller shares with them', async () => {
    const me = await createDeveloperWithToken(t.app);
    const colleague = await createDeveloperWithToken(t.app);
    const shared = await workspaceWith(me, colleague);
    const colleaguePrivate = await workspaceWith(colleague);
    const res = await t.http.get(`/workspaces/${shared.slug}/developers`).set(me.auth).expect(200);
    expect(res.body).toHaveLength(2);
    const seen = res.body.find((d: { id: string }) => d.id === colleague.developer.id);
    expect(seen).toMatchObject({ email: colleague.developer.email, kind: 'HUMAN', databases: expect.any(Array) });
    expect(seen.workspaces.map((w: { id: string }) => w.id)).toEqual([shared.id]);
    expect(JSON.stringify(res.body)).not.toContain(colleaguePrivate.id);
  });

  it("lists a member's database ids only from workspaces the caller shares", async () => {
    const me = await createDeveloperWithToken(t.app);
    const colleague = await createDeveloperWithToken(t.app);
    const shared = await workspaceWith(me, colleague);
    const privateWs = await workspaceWith(colleague);
    const create = (slug: string, auth: { Authorization: string }) =>
      t.http
        .post(`/workspaces/${slug}/databases`)
        .set(auth)
        .send({ databaseName: 'app', region: 'AWS_US_WEST_2' })
        .expect(201);
    const sharedDb = (await create(shared.slug, me.auth)).body.id;
    const privateDb = (await create(privateWs.slug, colleague.auth)).body.id;
    const res = await t.http.get(`/workspaces/${shared.slug}/developers`).set(me.auth).expect(200);
    const seen = res.body.find((d: { id: string }) => d.id === colleague.developer.id);
    expect(seen.databases).toEqual([sharedDb]);
    const own = await t.http.get('/developers/me').set(colleague.auth).expect(200);
    expect(own.body.databases).toEqual([sharedDb, privateDb]);
  });

  it('removes a developer, whose next request to the workspace is refused', async () => {
    const me = await createDeveloperWithToken(t.app);
    const colleague = await createDeveloperWithToken(t.app);
    const ws = await workspaceWith(me, colleague);
    await t.http.get(`/workspaces/${ws.slug}`).set(colleague.auth).expect(200);
    await t.http.delete(`/workspaces/${ws.slug}/developers/${colleague.developer.id}`).set(me.auth).expect(204);
    const res = await t.http.get(`/workspaces/${ws.slug}`).set(colleague.auth).expect(403);
    expect(res.body.errorCode).toBe('unauthorized_workspace_access');
    const rows = await t.dataSource.query('SELECT developer_id FROM workspace_members WHERE workspace_id = $1', [
      ws.id,
    ]);
    expect(rows).toEqual([{ developer_id: me.developer.id }]);
    const me2 = await t.http.get('/developers/me').set(colleague.auth).expect(200);
    expect(me2.body.workspaces).toEqual([]);
  });

  it('refuses to remove the last member', async () => {
    const me = await createDeveloperWithToken(t.app);
    const ws = await workspaceWith(me);
    const res = await t.http.delete(`/workspaces/${ws.slug}/developers/${me.developer.id}`).set(me.auth).expect(403);
    expect(res.body).toMatchObject({
      errorCode: 'forbidden_operation',
      message: expect.stringContaining('last member'),
    });
    await t.http.get(`/workspaces/${ws.slug}`).set(me.auth).expect(200);
  });

  it('refuses to remove the last active member even when deleted developers remain members', async () => {
    const me = await createDeveloperWithToken(t.app);
    const gone = await createDeveloperWithToken(t.app);
    const ws = await workspaceWith(me, gone);
    await t.dataSource.query('UPDATE developers SET deleted = now() WHERE id = $1', [gone.developer.id]);
    const res = await t.http.delete(`/workspaces/${ws.slug}/developers/${me.developer.id}`).set(me.auth).expect(403);
    expect(res.body.errorCode).toBe('forbidden_operation');
    await t.http.get(`/workspaces/${ws.slug}`).set(me.auth).expect(200);
  });

  it('leaves one member when the last two remove each other at the same time: one is removed, the other refused', async () => {
    const a = await createDeveloperWithToken(t.app);
    const b = await createDeveloperWithToken(t.app);
    const ws = await workspaceWith(a, b);
    const answers = await removeEachOther(ws, a, b);
    expect(answers.map((r) => r.status).sort()).toEqual([204, 403]);
    // The second in turn finds its caller removed by the first, as it would had it come after it.
    expect(answers.find((r) => r.status === 403)!.body).toEqual({
      errorCode: 'unauthorized_workspace_access',
      message: 'You do not have access to this workspace',
      statusCode: 403,
    });
    const rows = await t.dataSource.query('SELECT developer_id FROM workspace_members WHERE workspace_id = $1', [
      ws.id,
    ]);
    expect(rows).toHaveLength(1);
    // The one left is the one whose removal was refused, and it still reaches the workspace.
    const kept = answers[0].status === 403 ? b : a;
    expect(rows).toEqual([{ developer_id: kept.developer.id }]);
    await t.http.get(`/workspaces/${ws.slug}`).set(kept.auth).expect(200);
  });

  it('lets a member removed while their own removal of another waits for its turn remove nobody (403)', async () => {
    const a = await createDeveloperWithToken(t.app);
    const b = await createDeveloperWithToken(t.app);
    const c = await createDeveloperWithToken(t.app);
    const ws = await workspaceWith(a, b, c);
    // A removes C while C removes A: the removals take turns, and the second finds its caller removed
    // by the first.
    const answers = await removeEachOther(ws, a, c);
    expect(answers.map((r) => r.status).sort()).toEqual([204, 403]);
    expect(answers.find((r) => r.status === 403)!.body).toEqual({
      errorCode: 'unauthorized_workspace_access',
      message: 'You do not have access to this workspace',
      statusCode: 403,
    });
    const left = (
      await t.dataSource.query<{ developer_id: string }[]>(
        'SELECT developer_id FROM workspace_members WHERE workspace_id = $1',
        [ws.id],
      )
    ).map((r) => r.developer_id);
    const winner = answers[0].status === 204 ? a : c;
    expect(left.sort()).toEqual([b.developer.id, winner.developer.id].sort());
  });

  it('answers 404 for a developer who is not a member, or an id that is not one', async () => {
    const me = await createDeveloperWithToken(t.app);
    const stranger = await createDeveloperWithToken(t.app);
    const ws = await workspaceWith(me);
    const res = await t.http
      .delete(`/workspaces/${ws.slug}/developers/${stranger.developer.id}`)
      .set(me.auth)
      .expect(404);
    expect(res.body.errorCode).toBe('entity_not_found');
    await t.http.delete(`/workspaces/${ws.slug}/developers/not-a-uuid`).set(me.auth).expect(404);
  });

  it('shows the caller their own workspaces in /developers/me', async () => {
    const me = await createDeveloperWithToken(t.app);
    const ws = await workspaceWith(me);
    const res = await t.http.get('/developers/me').set(me.auth).expect(200);
    expect(res.body.workspaces).toEqual([expect.objectContaining({ id: ws.id, slug: ws.slug })]);
  });

  it('answers /developers/me with the whole Developer document as JSON: workspaces oldest first, then the live database ids of each in turn', async () => {
    const me = await createDeveloperWithToken(t.app);
    const first = await workspaceWith(me);
    const empty = await workspaceWith(me);
    const last = await workspaceWith(me);
    const create = async (slug: string, databaseName: string) =>
      (
        await t.http
          .post(`/workspaces/${slug}/databases`)
          .set(me.auth)
          .send({ databaseName, region: 'AWS_US_WEST_2' })
          .expect(201)
      ).body.id as string;
    const a = await create(first.slug, 'one');
    const gone = await create(first.slug, 'two');
    const b = await create(first.slug, 'three');
    const c = await create(last.slug, 'one');
    await t.http.delete(`/workspaces/${first.slug}/databases/two`).set(me.auth).expect(200);
    const workspace = async (slug: string) => (await t.http.get(`/workspaces/${slug}`).set(me.auth).expect(200)).body;

    const res = await t.http.get('/developers/me').set(me.auth).expect(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({
      id: me.developer.id,
      email: me.developer.email,
      kind: 'HUMAN',
      workspaces: [await workspace(first.slug), await workspace(empty.slug), await workspace(last.slug)],
      databases: [a, b, c],
    });
    expect(res.text).not.toContain(gone);
  });
});
