import { InvitesService } from '../../src/invites/invites.service';
import { expectRefusalPage, readForm } from '../support/html-page';
import { withSlowRows } from '../support/slow-rows';
import { createDeveloperWithToken, createTestApp, TestApp, uniqueEmail } from '../support/test-app';

async function invite(t: TestApp, email: string) {
  const owner = await createDeveloperWithToken(t.app);
  const ws = (
    await t.http
      .post('/workspaces')
      .set(owner.auth)
      .send({ name: `Join ${Math.random().toString(36).slice(2, 9)}` })
      .expect(201)
  ).body;
  const inv = (
    await t.http.post(`/workspaces/${ws.slug}/invites`).set(owner.auth).send({ email, programmatic: true }).expect(201)
  ).body;
  const code = inv.code as string;
  // What the e-mailed link carries besides the code (the e-mail itself is tested in invites.e2e-spec).
  const proof = t.app.get(InvitesService).emailProof(code);
  return { ws, code, proof, inviteId: inv.id as string };
}

/** Makes `email` an account: it joins a workspace through an e-mailed invite, choosing `password`. */
async function joinWithNewAccount(t: TestApp, email: string, password: string): Promise<void> {
  const { code, proof } = await invite(t, email);
  await t.http.post('/invites/join').type('form').send({ code, proof, password }).expect(200);
}

describe('the join page behind the e-mailed link', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const members = (workspaceId: string) =>
    t.dataSource.query(
      'SELECT d.email FROM workspace_members m JOIN developers d ON d.id = m.developer_id WHERE m.workspace_id = $1 ORDER BY m.created',
      [workspaceId],
    );

  it('lets a person without an account choose a password, creating a HUMAN developer who joins', async () => {
    const email = uniqueEmail('newbie');
    const { ws, code, proof, inviteId } = await invite(t, email);
    const page = await t.http.get('/invites/accept').query({ code, proof }).expect(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.text).toContain('Create account and join');
    expect(page.text).toContain('name="password"');

    expect(page.text).toContain(`name="proof" value="${proof}"`);

    const short = await t.http.post('/invites/join').type('form').send({ code, proof, password: 'short' }).expect(400);
    expect(short.text).toContain('password');

    const done = await t.http
      .post('/invites/join')
      .type('form')
      .send({ code, proof, password: 'a long enough password' })
      .expect(200);
    expect(done.text).toContain(`You joined ${ws.name}`);
    const [dev] = await t.dataSource.query('SELECT kind, password_hash FROM developers WHERE email = $1', [email]);
    expect(dev.kind).toBe('HUMAN');
    expect(dev.password_hash).toMatch(/^scrypt\$/);
    expect((await members(ws.id)).map((m: { email: string }) => m.email)).toContain(email);
    const [row] = await t.dataSource.query('SELECT state FROM invites WHERE id = $1', [inviteId]);
    expect(row.state).toBe('VERIFIED');
  });

  it('counts the chosen password in characters, not UTF-16 units: 4 emoji are too short, 1,000 are within the cap', async () => {
    const email = uniqueEmail('emoji');
    const { code, proof } = await invite(t, email);
    const short = await t.http.post('/invites/join').type('form').send({ code, proof, password: '😀😀😀😀' });
    expect(short.status).toBe(400);
    expect(await t.dataSource.query('SELECT id FROM developers WHERE email = $1', [email])).toEqual([]);
    await t.http
      .post('/invites/join')
      .type('form')
      .send({ code, proof, password: '😀'.repeat(1000) })
      .expect(200);
    expect(await t.dataSource.query('SELECT kind FROM developers WHERE email = $1', [email])).toEqual([
      { kind: 'HUMAN' },
    ]);
  });

  it('makes one account and one membership when the link is used twice at once', async () => {
    const email = uniqueEmail('double');
    const { ws, code, proof, inviteId } = await invite(t, email);
    // Marking this invite used waits 0.3 s inside the sign-up's transaction: the other sign-up reads
    // the invite meanwhile, and only the invite's row lock makes it wait for the outcome.
    const join = () =>
      t.http.post('/invites/join').type('form').send({ code, proof, password: 'a long enough password' });
    const answers = await withSlowRows(
      t.dataSource,
      { table: 'invites', on: 'UPDATE', when: `OLD.id = '${inviteId}'::uuid AND NEW.state = 'VERIFIED'`, seconds: 0.3 },
      () => Promise.all([join(), join()]),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
    expect(answers.find((a) => a.status === 200)!.text).toContain(`You joined ${ws.name}`);
    expect(answers.find((a) => a.status === 400)!.text).toContain('This invite has already been used');
    const developers = await t.dataSource.query<{ id: string }[]>('SELECT id FROM developers WHERE email = $1', [
      email,
    ]);
    expect(developers).toHaveLength(1);
    expect((await members(ws.id)).map((m: { email: string }) => m.email).filter((e: string) => e === email)).toEqual([
      email,
    ]);
    const [row] = await t.dataSource.query('SELECT state, accepted_by FROM invites WHERE id = $1', [inviteId]);
    expect(row).toEqual({ state: 'VERIFIED', accepted_by: developers[0].id });
  });

  it('asks a person with an account for their password and refuses a wrong one', async () => {
    const email = uniqueEmail('known');
    await joinWithNewAccount(t, email, 'first password here');
    // Signing in needs the e-mailed link (its proof) too: with the bare code the page would tell
    // whoever holds it that the address has an account (join-page-bare-code.e2e-spec).
    const { ws, code, proof } = await invite(t, email);
    const page = await t.http.get('/invites/accept').query({ code, proof }).expect(200);
    expect(page.text).toContain('Sign in and join');
    expect(page.text).toContain(`name="proof" value="${proof}"`);
    const wrong = await t.http
      .post('/invites/join')
      .type('form')
      .send({ code, proof, password: 'not my password' })
      .expect(401);
    expect(wrong.text).toContain('Wrong password');
    expect(wrong.text).toContain(`name="proof" value="${proof}"`);
    expect((await members(ws.id)).map((m: { email: string }) => m.email)).not.toContain(email);
    await t.http.post('/invites/join').type('form').send({ code, proof, password: 'first password here' }).expect(200);
    expect((await members(ws.id)).map((m: { email: string }) => m.email)).toContain(email);
  });

  it('posts its form next to the page it was served at: with or without a trailing slash, under a proxy prefix', async () => {
    const email = uniqueEmail('prefix');
    await joinWithNewAccount(t, email, 'first password here');
    const { ws, code, proof } = await invite(t, email);
    // Served as the proxy forwards it (prefix stripped), read as the browser saw it (prefix kept).
    const forms = [];
    for (const path of ['/invites/accept', '/invites/accept/']) {
      const page = await t.http.get(path).query({ code, proof }).expect(200);
      for (const prefix of ['', '/prefix']) {
        const seen = new URL(`https://cp.example${prefix}${path}?code=x`);
        forms.push({ seen, ...readForm(page.text, seen) });
      }
    }
    expect(forms.map(({ seen, target }) => [seen.href, target.href])).toEqual(
      forms.map(({ seen }) => [seen.href, `https://cp.example${seen.pathname.replace(/accept\/?$/, 'join')}`]),
    );
    // The form served again after a wrong password (from /invites/join, with or without the slash).
    for (const path of ['/invites/join', '/invites/join/']) {
      const wrong = await t.http.post(path).type('form').send({ code, proof, password: 'not my password' }).expect(401);
      const seen = new URL(`https://cp.example/prefix${path}`);
      expect(readForm(wrong.text, seen).target.href).toBe('https://cp.example/prefix/invites/join');
    }
    // And a browser's submission from the page at /invites/accept/ joins.
    const page = await t.http.get('/invites/accept/').query({ code, proof }).expect(200);
    const { target, fields } = readForm(page.text, new URL('http://127.0.0.1/invites/accept/'));
    await t.http
      .post(target.pathname)
      .type('form')
      .send({ ...fields, password: 'first password here' })
      .expect(200);
    expect((await members(ws.id)).map((m: { email: string }) => m.email)).toContain(email);
  });

  it('shows an error page, never a form, for an unknown or used code', async () => {
    const unknown = await t.http.get('/invites/accept').query({ code: 'nope' }).expect(404);
    expect(unknown.text).toContain('cannot be used');
    expect(unknown.text).not.toContain('<form');
    const email = uniqueEmail('used');
    const { code, proof } = await invite(t, email);
    await t.http
      .post('/invites/join')
      .type('form')
      .send({ code, proof, password: 'a long enough password' })
      .expect(200);
    const used = await t.http.get('/invites/accept').query({ code }).expect(400);
    expect(used.text).toContain('already been used');
  });

  it('answers a form it cannot read with a page saying what is wrong, not with JSON', async () => {
    const res = await t.http.post('/invites/join').type('form').send({ password: 'a long enough password' });
    expectRefusalPage(res, 400, 'code must be a string');
  });

  it('never creates an account from a bare code: only the e-mailed link (with its proof) can', async () => {
    const email = uniqueEmail('claimed');
    const { code, proof } = await invite(t, email); // the inviter holds the bare code of a programmatic invite
    const page = await t.http.get('/invites/accept').query({ code }).expect(403);
    expect(page.text).toContain('open the link from the invitation e-mail');
    expect(page.text).not.toContain('<form');
    for (const forged of [undefined, 'forged', `${proof}x`]) {
      const res = await t.http
        .post('/invites/join')
        .type('form')
        .send({ code, password: 'the inviter chose this', ...(forged === undefined ? {} : { proof: forged }) })
        .expect(403);
      expect(res.text).toContain('open the link from the invitation e-mail');
    }
    expect(await t.dataSource.query('SELECT id FROM developers WHERE email = $1', [email])).toEqual([]);
    await t.http
      .post('/invites/join')
      .type('form')
      .send({ code, proof, password: 'the invitee chose this' })
      .expect(200);
  });

  it('leaves no account behind when joining fails after the account was made (the invite vanished meanwhile)', async () => {
    const email = uniqueEmail('vanished');
    const { code, proof, inviteId } = await invite(t, email);
    const invites = t.app.get(InvitesService);
    const stale = await invites.findByCode(code);
    await t.dataSource.query('DELETE FROM invites WHERE id = $1', [inviteId]);
    const spy = jest.spyOn(invites, 'findByCode').mockResolvedValue(stale);
    try {
      const res = await t.http
        .post('/invites/join')
        .type('form')
        .send({ code, proof, password: 'a long enough password' })
        .expect(404);
      expect(res.text).toContain('Invite not found');
    } finally {
      spy.mockRestore();
    }
    expect(await t.dataSource.query('SELECT id FROM developers WHERE email = $1', [email])).toEqual([]);
  });
});

describe("the join page's sign-in counts against the account's password attempts", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_LOGIN_PER_ACCOUNT_PER_HOUR: '2' });
  });
  afterAll(() => t.close());

  it("refuses the account's sign-in once its attempts are spent, there as on the login form", async () => {
    const email = uniqueEmail('guessed');
    await joinWithNewAccount(t, email, 'first password here');
    const { ws, code, proof, inviteId } = await invite(t, email);
    const join = (password: string) => t.http.post('/invites/join').type('form').send({ code, proof, password });
    await join('guess one').expect(401);
    await join('guess two').expect(401);
    const refused = await join('first password here').expect(429);
    expect(refused.text).toContain('Too many sign-in attempts for this account');
    expect(refused.text).toContain('<form'); // the page, to try again later
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    const [row] = await t.dataSource.query('SELECT state FROM invites WHERE id = $1', [inviteId]);
    expect(row.state).not.toBe('VERIFIED');
    const joined = await t.dataSource.query(
      'SELECT 1 FROM workspace_members m JOIN developers d ON d.id = m.developer_id WHERE m.workspace_id = $1 AND d.email = $2',
      [ws.id, email],
    );
    expect(joined).toEqual([]);
  });
});
