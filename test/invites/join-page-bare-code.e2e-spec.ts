import { DeveloperKind } from '../../src/developers/developer.entity';
import { DevelopersService } from '../../src/developers/developers.service';
import { InvitesService } from '../../src/invites/invites.service';
import { createDeveloperWithToken, createTestApp, TestApp, uniqueEmail } from '../support/test-app';

/**
 * A programmatic invite hands its inviter the bare code, for any address they like. Without the
 * e-mailed link's proof the join page and its form must then tell them nothing about that address
 * (whether it has an account on the service) and must not check a password for it; with the proof,
 * a person with an account signs in and one without creates it, as before.
 */
describe('the join page with a bare code (no e-mailed proof)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const PASSWORD = 'the registered password';

  /** An inviter's workspace with programmatic invites to an address with an account and one without. */
  async function invitesToBoth() {
    const inviter = await createDeveloperWithToken(t.app);
    const ws = (
      await t.http
        .post('/workspaces')
        .set(inviter.auth)
        .send({ name: `Bare ${Math.random().toString(36).slice(2, 9)}` })
        .expect(201)
    ).body as { id: string; slug: string; name: string };
    const registered = uniqueEmail('registered');
    await t.app.get(DevelopersService).create({ email: registered, kind: DeveloperKind.Human, password: PASSWORD });
    const unknown = uniqueEmail('nobody');
    const codeFor = async (email: string) =>
      (
        (
          await t.http
            .post(`/workspaces/${ws.slug}/invites`)
            .set(inviter.auth)
            .send({ email, programmatic: true })
            .expect(201)
        ).body as { code: string }
      ).code;
    return {
      ws,
      registered: { email: registered, code: await codeFor(registered) },
      unknown: { email: unknown, code: await codeFor(unknown) },
    };
  }

  /** An answer with the invitee's address (which the inviter chose, so it tells them nothing) taken out. */
  const shape = (res: { status: number; text: string; headers: Record<string, string> }, email: string) => ({
    status: res.status,
    type: res.headers['content-type'],
    body: res.text.split(email).join('<address>'),
  });

  const memberships = (workspaceId: string, email: string) =>
    t.dataSource.query(
      'SELECT 1 FROM workspace_members m JOIN developers d ON d.id = m.developer_id WHERE m.workspace_id = $1 AND d.email = $2',
      [workspaceId, email],
    );

  it('shows the same page whether or not the address has an account', async () => {
    const { registered, unknown } = await invitesToBoth();
    const a = await t.http.get('/invites/accept').query({ code: registered.code });
    const b = await t.http.get('/invites/accept').query({ code: unknown.code });
    expect(shape(a, registered.email)).toEqual(shape(b, unknown.email));
    expect(a.status).toBe(403);
    expect(a.text).toContain('open the link from the invitation e-mail');
    expect(a.text).not.toContain('<form');
    // A forged proof is no proof.
    const forged = await t.http.get('/invites/accept').query({ code: registered.code, proof: 'forged' });
    expect(shape(forged, registered.email)).toEqual(shape(b, unknown.email));
  });

  it('answers the form the same way, without checking a password, whether or not the address has an account', async () => {
    const { ws, registered, unknown } = await invitesToBoth();
    const developers = t.app.get(DevelopersService);
    const authenticate = jest.spyOn(developers, 'authenticate');
    const lookup = jest.spyOn(developers, 'findActiveByEmail');
    try {
      const join = (code: string, password: string, proof?: string) =>
        t.http
          .post('/invites/join')
          .type('form')
          .send({ code, password, ...(proof === undefined ? {} : { proof }) });
      const wrong = await join(registered.code, 'not the password');
      const right = await join(registered.code, PASSWORD);
      const forged = await join(registered.code, PASSWORD, 'forged');
      const none = await join(unknown.code, 'a password the inviter chose');
      for (const res of [wrong, right, forged])
        expect(shape(res, registered.email)).toEqual(shape(none, unknown.email));
      expect(none.status).toBe(403);
      expect(none.text).toContain('open the link from the invitation e-mail');
      // No account was looked up and no password checked: no answer (nor its timing) depends on them.
      expect(authenticate).not.toHaveBeenCalled();
      expect(lookup).not.toHaveBeenCalled();
    } finally {
      authenticate.mockRestore();
      lookup.mockRestore();
    }
    expect(await memberships(ws.id, registered.email)).toEqual([]);
    expect(await t.dataSource.query('SELECT id FROM developers WHERE email = $1', [unknown.email])).toEqual([]);
  });

  it('still lets both invitees join with the e-mailed link (code and proof)', async () => {
    const { ws, registered, unknown } = await invitesToBoth();
    const invites = t.app.get(InvitesService);

    const signIn = await t.http
      .get('/invites/accept')
      .query({ code: registered.code, proof: invites.emailProof(registered.code) })
      .expect(200);
    expect(signIn.text).toContain('Sign in and join');
    await t.http
      .post('/invites/join')
      .type('form')
      .send({ code: registered.code, proof: invites.emailProof(registered.code), password: 'wrong password' })
      .expect(401);
    await t.http
      .post('/invites/join')
      .type('form')
      .send({ code: registered.code, proof: invites.emailProof(registered.code), password: PASSWORD })
      .expect(200);
    expect(await memberships(ws.id, registered.email)).toHaveLength(1);

    const create = await t.http
      .get('/invites/accept')
      .query({ code: unknown.code, proof: invites.emailProof(unknown.code) })
      .expect(200);
    expect(create.text).toContain('Create account and join');
    await t.http
      .post('/invites/join')
      .type('form')
      .send({ code: unknown.code, proof: invites.emailProof(unknown.code), password: 'a long enough password' })
      .expect(200);
    expect(await memberships(ws.id, unknown.email)).toHaveLength(1);
  });

  it('lets a developer with an account accept a programmatic invite through the API instead', async () => {
    const inviter = await createDeveloperWithToken(t.app);
    const invitee = await createDeveloperWithToken(t.app);
    const ws = (
      await t.http
        .post('/workspaces')
        .set(inviter.auth)
        .send({ name: `Api ${Math.random().toString(36).slice(2, 9)}` })
        .expect(201)
    ).body as { id: string; slug: string };
    const { code } = (
      await t.http
        .post(`/workspaces/${ws.slug}/invites`)
        .set(inviter.auth)
        .send({ email: invitee.developer.email, programmatic: true })
        .expect(201)
    ).body as { code: string };
    await t.http.get('/invites/accept').query({ code }).expect(403);
    const joined = await t.http.post('/invites/accept').set(invitee.auth).send({ code }).expect(200);
    expect(joined.body).toEqual(expect.objectContaining({ id: ws.id, slug: ws.slug }));
  });
});
