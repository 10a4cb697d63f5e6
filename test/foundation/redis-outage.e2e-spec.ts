import { TestSmtpServer } from '../support/smtp';
import {
  createDeveloperWithToken,
  createIsolatedMetadataDatabase,
  createTestApp,
  dropMetadataDatabase,
  eventually,
  reconcile,
  uniqueEmail,
} from '../support/test-app';

describe('PostgreSQL is the truth, jobs only hurry it along', () => {
  it('accepts a request that owes background work while Redis is down; the work happens once it is back', async () => {
    const smtp = await TestSmtpServer.start();
    const email = uniqueEmail('outage');
    let inviteId: string;
    // Both apps on a metadata database of this spec's own: on the run's shared one, another spec's
    // reconciler could send the pending invite while Redis is down here.
    const metadataUrl = await createIsolatedMetadataDatabase();
    const down = await createTestApp({
      DATABASE_URL: metadataUrl,
      REDIS_URL: 'redis://127.0.0.1:1',
      SMTP_URL: smtp.url,
    });
    try {
      const owner = await createDeveloperWithToken(down.app);
      const ws = (
        await down.http
          .post('/workspaces')
          .set(owner.auth)
          .send({ name: `Outage ${Date.now()}` })
          .expect(201)
      ).body;
      const invite = await down.http.post(`/workspaces/${ws.slug}/invites`).set(owner.auth).send({ email }).expect(201);
      inviteId = invite.body.id;
      const [row] = await down.dataSource.query('SELECT state FROM invites WHERE id = $1', [inviteId]);
      expect(row.state).toBe('EMAIL_PENDING');
    } finally {
      await down.close();
    }

    const up = await createTestApp({ DATABASE_URL: metadataUrl, SMTP_URL: smtp.url });
    try {
      await reconcile(up.app);
      await eventually(async () => {
        const [row] = await up.dataSource.query('SELECT state FROM invites WHERE id = $1', [inviteId]);
        return row.state === 'EMAIL_SENT';
      });
      expect(smtp.messagesTo(email)).toHaveLength(1);
    } finally {
      await up.close();
      await smtp.close();
      await dropMetadataDatabase(metadataUrl);
    }
  });
});
