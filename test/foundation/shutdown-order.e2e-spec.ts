import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options';
import { provisionJobId } from '../../src/databases/database-jobs';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { createWorkspace } from '../databases/support';
import { withGatedRows } from '../support/slow-rows';
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
  const queuePrefix = `test-shutdown-${Date.now().toString(36)}`;
  let smtp: TestSmtpServer;
  let metadataUrl: string;
  let t: TestApp | undefined;

  beforeAll(async () => {
    smtp = await TestSmtpServer.start();
    // Its own metadata database: another spec's reconciler must not send this spec's invite.
    metadataUrl = await createIsolatedMetadataDatabase();
    t = await createTestApp({
      DATABASE_URL: metadataUrl,
      SMTP_URL: smtp.url,
      QUEUE_PREFIX: queuePrefix,
      DATABASE_POOL_TARGET: '0',
    });
  });
  afterAll(async () => {
    await t?.close();
    await smtp.close();
    await dropMetadataDatabase(metadataUrl);
  });

  it('lets the job finish with what it uses (the mail transport, the metadata pool) before they close; a request in flight still enqueues its job', async () => {
    const app = t!;
    const owner = await createDeveloperWithToken(app.app);
    const ws = await createWorkspace(app, owner.auth);
    const email = uniqueEmail('shutdown');
    smtp.holdMs = 1500; // the e-mail job is still sending when the shutdown begins
    const invite = (await app.http.post(`/workspaces/${ws.slug}/invites`).set(owner.auth).send({ email }).expect(201))
      .body as { id: string };
    const emails = app.app.get(JobDispatcher).queue('invite-email');
    await eventually(async () => (await emails.getActiveCount()) === 1);

    // A database create in flight, held at its insert until the processors have stopped taking jobs.
    const lifecycle = app.app.get(JobDispatcher).queue('database-lifecycle');
    let stopped = false;
    for (const method of ['pause', 'close'] as const) {
      const original = lifecycle[method].bind(lifecycle) as (...args: unknown[]) => Promise<void>;
      jest.spyOn(lifecycle, method).mockImplementation(async (...args: unknown[]) => {
        await original(...args);
        stopped = true;
      });
    }
    const name = `inflight_${Date.now().toString(36)}`;
    // The gate on a connection of its own: the app's pool closes while it is held.
    const gateDb = new DataSource(dataSourceOptions(metadataUrl, 2));
    await gateDb.initialize();
    const created = await withGatedRows(
      gateDb,
      { table: 'databases', on: 'INSERT', when: `NEW.name = '${name}'` },
      async (gate) => {
        const request = app.http
          .post(`/workspaces/${ws.slug}/databases`)
          .set(owner.auth)
          .send({ databaseName: name, region: 'AWS_US_WEST_2' })
          .then((res) => res);
        await gate.untilGated();
        const closing = app.close();
        await eventually(() => Promise.resolve(stopped));
        await gate.open();
        const res = await request;
        await closing;
        return res;
      },
    );
    await gateDb.destroy();
    t = undefined;
    expect(created.status).toBe(201);

    // Sent, and recorded as sent: the job ended before the transport and the pools closed.
    expect(smtp.messagesTo(email)).toHaveLength(1);
    const db = await createTestApp({ DATABASE_URL: metadataUrl, WORKERS: 'off', QUEUE_PREFIX: queuePrefix });
    try {
      const [row] = await db.dataSource.query<{ state: string }[]>('SELECT state FROM invites WHERE id = $1', [
        invite.id,
      ]);
      expect(row.state).toBe('EMAIL_SENT');
      // The create's build job is in the queue for the workers that stay.
      const job = await db.app.get(JobDispatcher).queue('database-lifecycle').getJob(provisionJobId(created.body.id));
      expect(job?.data).toMatchObject({ databaseId: created.body.id });
    } finally {
      await db.close();
    }
  });
});
