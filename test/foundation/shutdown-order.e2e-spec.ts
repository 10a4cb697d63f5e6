import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { createWorkspace } from '../databases/support';
import { TestSmtpServer } from '../support/smtp';
import {
  createDeveloperWithToken,
  createIsolatedMetadataDatabase,
  createTestApp,
  dropMetadataDatabase,
  eventually,
  TestApp,
  uniqueEmail,
} from '../support/test-app';

describe('a graceful shutdown with a job in flight', () => {
  let smtp: TestSmtpServer;
  let metadataUrl: string;
  let t: TestApp | undefined;

  beforeAll(async () => {
    smtp = await TestSmtpServer.start();
    // Its own metadata database: another spec's reconciler must not send this spec's invite.
    metadataUrl = await createIsolatedMetadataDatabase();
    t = await createTestApp({ DATABASE_URL: metadataUrl, SMTP_URL: smtp.url });
  });
  afterAll(async () => {
    await t?.close();
    await smtp.close();
    await dropMetadataDatabase(metadataUrl);
  });

  it('lets the job finish with what it uses (the mail transport, the metadata pool) before they close', async () => {
    const app = t!;
    const owner = await createDeveloperWithToken(app.app);
    const ws = await createWorkspace(app, owner.auth);
    const email = uniqueEmail('shutdown');
    smtp.holdMs = 1500; // the e-mail job is still sending when the shutdown begins
    const invite = (await app.http.post(`/workspaces/${ws.slug}/invites`).set(owner.auth).send({ email }).expect(201))
      .body as { id: string };
    const emails = app.app.get(JobDispatcher).queue('invite-email');
    await eventually(async () => (await emails.getActiveCount()) === 1);

    await app.close();
    t = undefined;

    // Sent, and recorded as sent: the job ended before the transport and the pools closed.
    expect(smtp.messagesTo(email)).toHaveLength(1);
    const db = await createTestApp({ DATABASE_URL: metadataUrl, WORKERS: 'off' });
    try {
      const [row] = await db.dataSource.query<{ state: string }[]>('SELECT state FROM invites WHERE id = $1', [
        invite.id,
      ]);
      expect(row.state).toBe('EMAIL_SENT');
    } finally {
      await db.close();
    }
  });
});
