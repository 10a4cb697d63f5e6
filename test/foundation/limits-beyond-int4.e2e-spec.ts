import { createReadyDatabase, createWorkspace, unique } from '../databases/support';
import { createDeveloperWithToken, createTestApp, TestApp } from '../support/test-app';

/** The largest value the configuration takes for a limit: any safe integer, far beyond PostgreSQL's int4. */
const HUGE = String(Number.MAX_SAFE_INTEGER);

/**
 * The limits counted over a sliding window of records (invite e-mails, subscription changes,
 * compute changes) take any safe integer, as the configuration does: one above 2^31 - 1 (an
 * operator's "no limit") governs its requests like any other, instead of failing each of them.
 */
describe('limits counted over a window, set beyond 2^31 - 1', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      INVITES_PER_SENDER_PER_HOUR: HUGE,
      INVITES_PER_RECIPIENT_PER_HOUR: HUGE,
      INVITES_PER_HOUR: HUGE,
      SUBSCRIPTION_CHANGES_PER_DAY: HUGE,
      COMPUTE_CHANGES_PER_DATABASE_PER_DAY: HUGE,
      DATABASE_POOL_TARGET: '0',
    });
  });
  afterAll(() => t?.close());

  it('let invites, subscription changes and compute changes through', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const { slug } = await createWorkspace(t, auth);
    const invite = await t.http
      .post(`/workspaces/${slug}/invites`)
      .set(auth)
      .send({ email: `huge-${unique()}@example.test` });
    expect({ status: invite.status, body: invite.status === 201 ? undefined : invite.body }).toEqual({
      status: 201,
      body: undefined,
    });
    const subscription = await t.http.post(`/workspaces/${slug}/subscription`).set(auth).send({ level: 'PRO' });
    expect({ status: subscription.status, level: subscription.body.level }).toEqual({ status: 201, level: 'PRO' });
    const changed = await t.http.put(`/workspaces/${slug}/subscription`).set(auth).send({ level: 'FREE' });
    expect({ status: changed.status, level: changed.body.level }).toEqual({ status: 200, level: 'FREE' });
    const db = await createReadyDatabase(t, auth, slug);
    const compute = await t.http
      .post(`/workspaces/${slug}/databases/${db.name}/compute`)
      .set(auth)
      .send({ instanceSize: 'small', instanceName: `huge_${unique()}` });
    expect({ status: compute.status, body: compute.status === 202 ? undefined : compute.body }).toEqual({
      status: 202,
      body: undefined,
    });
  });
});
