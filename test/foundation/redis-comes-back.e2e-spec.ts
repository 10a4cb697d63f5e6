import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { createWorkspace } from '../databases/support';
import { TcpRelay } from '../support/tcp-relay';
import { TestSmtpServer } from '../support/smtp';
import {
  createDeveloperWithToken,
  createIsolatedMetadataDatabase,
  createTestApp,
  dropMetadataDatabase,
  eventually,
  reconcile,
  TestApp,
  uniqueEmail,
} from '../support/test-app';

describe('Redis goes away while the service runs, and comes back', () => {
  // The run's Redis behind a relay that can go down and come back on the same address, as a Redis
  // restart or a network cut looks to the service.
  let link: TcpRelay;
  let smtp: TestSmtpServer;
  let metadataUrl: string;
  let t: TestApp | undefined;

  beforeEach(async () => {
    link = await TcpRelay.to({ host: '127.0.0.1', port: 6379 });
    await link.up();
    smtp = await TestSmtpServer.start();
    // A metadata database of this spec's own: on the run's shared one, another spec's reconciler
    // could send this spec's pending invites while its Redis is away.
    metadataUrl = await createIsolatedMetadataDatabase();
    t = await createTestApp({
      DATABASE_URL: metadataUrl,
      REDIS_URL: link.through('redis://127.0.0.1:6379'),
      SMTP_URL: smtp.url,
    });
  });

  afterEach(async () => {
    await t?.close();
    await link.down();
    await smtp.close();
    await dropMetadataDatabase(metadataUrl);
  });

  async function inviteIn(app: TestApp) {
    const owner = await createDeveloperWithToken(app.app);
    const ws = await createWorkspace(app, owner.auth);
    return async (email: string): Promise<string> =>
      (await app.http.post(`/workspaces/${ws.slug}/invites`).set(owner.auth).send({ email }).expect(201)).body.id;
  }

  it('answers 503 on readiness while it is away and 200 once back; work owed meanwhile is done once it is back, and the queues work again', async () => {
    const app = t!;
    const invite = await inviteIn(app);
    const before = uniqueEmail('before');
    await invite(before);
    await eventually(() => Promise.resolve(smtp.messagesTo(before).length === 1));

    await link.down();
    await eventually(async () => (await app.http.get('/health/ready')).status === 503);
    const during = uniqueEmail('during');
    const started = Date.now();
    const owed = await invite(during);
    expect(Date.now() - started).toBeLessThan(1000); // not the enqueue's 2 s timeout
    const [row] = await app.dataSource.query('SELECT state FROM invites WHERE id = $1', [owed]);
    expect(row.state).toBe('EMAIL_PENDING');

    // Once Redis is back the reconciler runs at once (not at its next interval, an hour in these specs).
    await link.up();
    await eventually(async () => (await app.http.get('/health/ready')).status === 200);
    await eventually(() => Promise.resolve(smtp.messagesTo(during).length === 1));
    // New work goes through the queue again, the processors having reconnected (no reconcile here).
    const after = uniqueEmail('after');
    await invite(after);
    await eventually(() => Promise.resolve(smtp.messagesTo(after).length === 1));
    expect(smtp.messagesTo(before)).toHaveLength(1);
    expect(smtp.messagesTo(during)).toHaveLength(1);
  });

  it('shuts down promptly while Redis is away, even with a job in flight', async () => {
    const app = t!;
    const invite = await inviteIn(app);
    smtp.holdMs = 4000; // the e-mail job is still sending when Redis goes away
    await invite(uniqueEmail('in-flight'));
    const emails = app.app.get(JobDispatcher).queue('invite-email');
    await eventually(async () => (await emails.getActiveCount()) === 1);
    await link.down();
    await eventually(async () => (await app.http.get('/health/ready')).status === 503);

    const started = Date.now();
    await app.close();
    t = undefined;

    // Bull's graceful close waited for the job, then for its result's write to give up on Redis: 41 s.
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('passes over owed work within seconds while Redis keeps its connections but answers nothing, and does it once Redis answers again', async () => {
    const app = t!;
    const invite = await inviteIn(app);
    // Every command from now on is held back, on connections that stay open (a Redis paused, or a
    // network dropping its packets): no connection closes, so nothing says Redis went away.
    link.hold(/./);
    const owed: string[] = [];
    for (let i = 0; i < 3; i++) owed.push(uniqueEmail(`stalled-${i}`));
    for (const email of owed) await invite(email);

    // The first invite's enqueue waited out its 2 s; since then every queue counts as away, so the
    // pass enqueues nothing and waits for nothing. Before, the pass waited on its first command for
    // as long as Redis held it, and every later pass was that same one.
    const started = Date.now();
    await reconcile(app.app);
    expect(Date.now() - started).toBeLessThan(1500);
    for (const email of owed) expect(smtp.messagesTo(email)).toHaveLength(0);

    // Once Redis answers again, the owed e-mails go out (a pass runs at once), each once.
    link.release();
    await eventually(() => Promise.resolve(owed.every((email) => smtp.messagesTo(email).length === 1)));
    // The sink has a message before its job records it sent: wait for the records, not only the mail.
    const states = async () =>
      (await app.dataSource.query<{ state: string }[]>('SELECT state FROM invites WHERE email = ANY($1)', [owed])).map(
        (row) => row.state,
      );
    await eventually(async () => (await states()).every((state) => state === 'EMAIL_SENT'));
    expect(await states()).toEqual(['EMAIL_SENT', 'EMAIL_SENT', 'EMAIL_SENT']);
    for (const email of owed) expect(smtp.messagesTo(email)).toHaveLength(1);
  });

  it('passes over owed work quickly while Redis is away, and a pass under way does not hold up shutdown', async () => {
    const app = t!;
    const invite = await inviteIn(app);
    await link.down();
    await eventually(async () => (await app.http.get('/health/ready')).status === 503);
    for (let i = 0; i < 3; i++) await invite(uniqueEmail(`owed-${i}`));

    // Each Redis command waited out the connection's reconnection attempts: 163 s for this pass.
    let started = Date.now();
    await reconcile(app.app);
    expect(Date.now() - started).toBeLessThan(1000);

    const passing = reconcile(app.app);
    started = Date.now();
    await app.close();
    t = undefined;
    await passing;
    expect(Date.now() - started).toBeLessThan(3000);
  });
});
