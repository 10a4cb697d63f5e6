import { DeveloperKind } from '../../src/developers/developer.entity';
import { DevelopersService } from '../../src/developers/developers.service';
import { InvitesService } from '../../src/invites/invites.service';
import { expectRefusalPage } from '../support/html-page';
import { createDeveloperWithToken, createTestApp, TestApp, uniqueEmail } from '../support/test-app';

const LIMIT = 3;

/**
 * Any developer can invite any address programmatically and so hold a code for it; only the e-mailed
 * link (with its proof) reaches the "sign in and join" form, but a link can be forwarded or leak:
 * without a limit, the form would be a password oracle for that account, beside the rate-limited
 * login form.
 */
describe('the join page is rate limited like the login form', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_AUTH_PER_MINUTE: String(LIMIT) });
  });
  afterAll(() => t.close());

  it('answers 429 with Retry-After, as a page, once the attempts per minute are spent', async () => {
    const victim = uniqueEmail('victim');
    await t.app
      .get(DevelopersService)
      .create({ email: victim, kind: DeveloperKind.Human, password: 'the-right-password' });
    const attacker = await createDeveloperWithToken(t.app);
    const ws = (
      await t.http
        .post('/workspaces')
        .set(attacker.auth)
        .send({ name: `Oracle ${Date.now()}` })
        .expect(201)
    ).body;
    const { code } = (
      await t.http
        .post(`/workspaces/${ws.slug}/invites`)
        .set(attacker.auth)
        .send({ email: victim, programmatic: true })
        .expect(201)
    ).body as { code: string };
    // The password is checked only for the e-mailed link (code and proof; join-page-bare-code.e2e-spec):
    // this is someone holding a forwarded or leaked link.
    const proof = t.app.get(InvitesService).emailProof(code);

    for (let i = 0; i < LIMIT; i++) {
      const guess = await t.http
        .post('/invites/join')
        .type('form')
        .send({ code, proof, password: `guess-${i}-wrong` });
      expect(guess.status).toBe(401);
    }
    const throttled = await t.http
      .post('/invites/join')
      .type('form')
      .send({ code, proof, password: 'the-right-password' });
    expectRefusalPage(throttled, 429, 'Too many attempts; retry in', { retryAfterAtMost: 60 });
    const joined = await t.dataSource.query(
      'SELECT 1 FROM workspace_members m JOIN developers d ON d.id = m.developer_id WHERE m.workspace_id = $1 AND d.email = $2',
      [ws.id, victim],
    );
    expect(joined).toEqual([]);
  });
});
