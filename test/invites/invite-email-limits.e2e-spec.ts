import { PRUNE_BATCH, PRUNE_BATCHES_PER_PASS } from '../../src/database/prune-in-batches';
import { InvitesService } from '../../src/invites/invites.service';
import { withSlowRows } from '../support/slow-rows';
import { TestSmtpServer } from '../support/smtp';
import {
  createDeveloperWithToken,
  createIsolatedTestApp,
  createTestApp,
  eventually,
  reconcile,
  TestApp,
  uniqueEmail,
} from '../support/test-app';

type Auth = { Authorization: string };

const PER_SENDER = 3;
const PER_RECIPIENT = 2;

/**
 * Invite e-mails carry text of the sender's choosing (the workspace's name) to an address of their
 * choosing, so they are limited per sender and per recipient address over a sliding hour, counted
 * in PostgreSQL under a lock, and a deleted invite still counts (invite, delete, invite again would
 * otherwise mail one address without end).
 */
describe('invite e-mail limits', () => {
  let smtp: TestSmtpServer;
  let t: TestApp;
  beforeAll(async () => {
    smtp = await TestSmtpServer.start();
    t = await createTestApp({
      SMTP_URL: smtp.url,
      INVITES_PER_SENDER_PER_HOUR: String(PER_SENDER),
      INVITES_PER_RECIPIENT_PER_HOUR: String(PER_RECIPIENT),
    });
  });
  afterAll(async () => {
    await t.close();
    await smtp.close();
  });

  /** A developer with a workspace of their own. */
  async function sender(name = `Click https://evil.example to claim ${Math.random().toString(36).slice(2, 8)}`) {
    const dev = await createDeveloperWithToken(t.app);
    const ws = (await t.http.post('/workspaces').set(dev.auth).send({ name }).expect(201)).body as {
      id: string;
      slug: string;
    };
    return { ...dev, ws };
  }

  const invite = (from: { auth: Auth; ws: { slug: string } }, email: string) =>
    t.http.post(`/workspaces/${from.ws.slug}/invites`).set(from.auth).send({ email });

  const expectThrottled = (res: { status: number; body: unknown; headers: Record<string, string> }) => {
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ errorCode: 'threshold_exceeded', message: expect.any(String), statusCode: 429 });
    const retryAfter = Number(res.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    return retryAfter;
  };

  const sendsBy = async (senderId: string) =>
    Number((await t.dataSource.query('SELECT count(*) AS n FROM invite_sends WHERE sender_id = $1', [senderId]))[0].n);

  it('limits the e-mails one sender causes per hour (429 with Retry-After); deleting the invites gives nothing back', async () => {
    const spammer = await sender();
    for (let i = 0; i < PER_SENDER; i++) {
      const created = await invite(spammer, uniqueEmail('target')).expect(201);
      await t.http.delete(`/workspaces/${spammer.ws.slug}/invites/${created.body.id}`).set(spammer.auth).expect(204);
    }
    const refused = await invite(spammer, uniqueEmail('target'));
    const retryAfter = expectThrottled(refused);
    expect(retryAfter).toBeGreaterThan(3500);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    expect(await t.dataSource.query('SELECT 1 FROM invites WHERE workspace_id = $1', [spammer.ws.id])).toEqual([]);
    expect(await sendsBy(spammer.developer.id)).toBe(PER_SENDER);
    // Another sender is not held back by this one.
    await invite(await sender(), uniqueEmail('target')).expect(201);
  });

  it('limits the e-mails one address is sent per hour, whoever sends them', async () => {
    const victim = uniqueEmail('victim');
    for (let i = 0; i < PER_RECIPIENT; i++) await invite(await sender(), victim.toUpperCase()).expect(201);
    const refused = await invite(await sender(), victim);
    expect(expectThrottled(refused)).toBeGreaterThan(3500);
    // Another address is not held back by this one.
    await invite(await sender(), uniqueEmail('other')).expect(201);
  });

  it('does not let invite, wait for the e-mail, delete, invite again mail one address without end', async () => {
    const spammer = await sender();
    const victim = uniqueEmail('victim');
    const answers: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await invite(spammer, victim);
      answers.push(res.status);
      if (res.status !== 201) continue;
      await eventually(() => Promise.resolve(smtp.messagesTo(victim).length > i));
      await t.http.delete(`/workspaces/${spammer.ws.slug}/invites/${res.body.id}`).set(spammer.auth).expect(204);
    }
    expect(answers).toEqual([201, 201, 429, 429, 429, 429]);
    await reconcile(t.app);
    expect(smtp.messagesTo(victim)).toHaveLength(PER_RECIPIENT);
  });

  it('counts over a sliding hour: Retry-After is the wait until the e-mail that filled the allowance leaves it', async () => {
    const victim = uniqueEmail('victim');
    const senders = [await sender(), await sender()];
    for (const s of senders) await invite(s, victim).expect(201);
    // The e-mails went 59 min and 59 min 30 s ago: the allowance is full until the older leaves the hour, in 30 s.
    await t.dataSource.query(
      `UPDATE invite_sends
          SET created = now() - CASE WHEN sender_id = $2 THEN interval '3570 seconds' ELSE interval '3540 seconds' END
        WHERE email = $1`,
      [victim, senders[0].developer.id],
    );
    const retryAfter = expectThrottled(await invite(await sender(), victim));
    expect(retryAfter).toBeGreaterThanOrEqual(29);
    expect(retryAfter).toBeLessThanOrEqual(31);
    // 40 s later the older has left the hour: one more e-mail may go, and then the wait is for the
    // other one (59 min 40 s old by then) to leave.
    await t.dataSource.query(`UPDATE invite_sends SET created = created - interval '40 seconds' WHERE email = $1`, [
      victim,
    ]);
    await invite(await sender(), victim).expect(201);
    const next = expectThrottled(await invite(await sender(), victim));
    expect(next).toBeGreaterThanOrEqual(19);
    expect(next).toBeLessThanOrEqual(21);
  });

  it('counts parallel creates one by one (per sender and per address)', async () => {
    const spammer = await sender();
    // Each create's record waits 0.2 s inside its transaction: creates that did not take turns would
    // all have counted before any of them wrote.
    const bySender = await withSlowRows(
      t.dataSource,
      { table: 'invite_sends', on: 'INSERT', when: `NEW.sender_id = '${spammer.developer.id}'::uuid`, seconds: 0.2 },
      () => Promise.all(Array.from({ length: 6 }, () => invite(spammer, uniqueEmail('parallel')))),
    );
    expect(bySender.map((r) => r.status).sort()).toEqual([201, 201, 201, 429, 429, 429]);
    expect(await sendsBy(spammer.developer.id)).toBe(PER_SENDER);

    const victim = uniqueEmail('victim');
    const many = await Promise.all(Array.from({ length: 5 }, () => sender()));
    const byAddress = await withSlowRows(
      t.dataSource,
      { table: 'invite_sends', on: 'INSERT', when: `NEW.email = '${victim}'`, seconds: 0.2 },
      () => Promise.all(many.map((s) => invite(s, victim))),
    );
    expect(byAddress.map((r) => r.status).sort()).toEqual([201, 201, 429, 429, 429]);
    expect(
      Number((await t.dataSource.query('SELECT count(*) AS n FROM invite_sends WHERE email = $1', [victim]))[0].n),
    ).toBe(PER_RECIPIENT);
  });

  it('does not count an invite that was refused (already a member, already pending)', async () => {
    const owner = await sender();
    const victim = uniqueEmail('victim');
    await invite(owner, victim).expect(201);
    await invite(owner, victim).expect(409);
    await invite(owner, owner.developer.email).expect(409);
    expect(await sendsBy(owner.developer.id)).toBe(1);
  });
});

describe('pruning the invite e-mail records', () => {
  let t: TestApp;
  beforeAll(async () => {
    // A metadata database of its own: the pruning counts every record past the hour.
    t = await createIsolatedTestApp({ INVITES_PER_SENDER_PER_HOUR: '2' });
  });
  afterAll(() => t.close());

  const records = async () =>
    (
      await t.dataSource.query<{ old: string; recent: string }[]>(
        `SELECT count(*) FILTER (WHERE created <= now() - interval '1 hour') AS old,
                count(*) FILTER (WHERE created > now() - interval '1 hour') AS recent FROM invite_sends`,
      )
    ).map((r) => ({ old: Number(r.old), recent: Number(r.recent) }))[0];

  it('deletes the records that left the hour, in bounded batches, and keeps those that still count', async () => {
    const dev = await createDeveloperWithToken(t.app);
    const ws = (await t.http.post('/workspaces').set(dev.auth).send({ name: 'Pruned' }).expect(201)).body as {
      slug: string;
    };
    for (let i = 0; i < 2; i++)
      await t.http.post(`/workspaces/${ws.slug}/invites`).set(dev.auth).send({ email: uniqueEmail() }).expect(201);
    const perPass = PRUNE_BATCH * PRUNE_BATCHES_PER_PASS;
    await t.dataSource.query(
      `INSERT INTO invite_sends (sender_id, email, created)
       SELECT gen_random_uuid(), 'old-' || n || '@example.test', now() - interval '61 minutes' - n * interval '1 second'
         FROM generate_series(1, $1) n`,
      [perPass + 7],
    );
    expect(await records()).toEqual({ old: perPass + 7, recent: 2 });

    const invites = t.app.get(InvitesService);
    expect(await invites.pruneSends()).toBe(perPass);
    expect(await invites.pruneSends()).toBe(7);
    expect(await invites.pruneSends()).toBe(0);
    expect(await records()).toEqual({ old: 0, recent: 2 });
    // What is kept still counts.
    const refused = await t.http
      .post(`/workspaces/${ws.slug}/invites`)
      .set(dev.auth)
      .send({ email: uniqueEmail() })
      .expect(429);
    expect(refused.body.errorCode).toBe('threshold_exceeded');

    // The reconciler runs it.
    await t.dataSource.query(
      `INSERT INTO invite_sends (sender_id, email, created) VALUES (gen_random_uuid(), 'late@example.test', now() - interval '2 hours')`,
    );
    await reconcile(t.app);
    expect(await records()).toEqual({ old: 0, recent: 2 });
  });
});

describe('the invite e-mails of the whole service', () => {
  let t: TestApp;
  beforeAll(async () => {
    // A metadata database of its own: the service's total counts every record of the hour.
    t = await createIsolatedTestApp({ INVITES_PER_SENDER_PER_HOUR: '2', INVITES_PER_HOUR: '5' });
  });
  afterAll(() => t.close());

  it('are limited per hour, however many accounts send them (429 with Retry-After, nothing written)', async () => {
    // Accounts cost nothing to make: four of them, each within its own allowance, send more than the
    // service's hour allows.
    const senders: { auth: Auth; slug: string }[] = [];
    for (let i = 0; i < 4; i++) {
      const dev = await createDeveloperWithToken(t.app);
      const ws = (
        await t.http
          .post('/workspaces')
          .set(dev.auth)
          .send({ name: `Minted ${i}` })
          .expect(201)
      ).body;
      senders.push({ auth: dev.auth, slug: ws.slug as string });
    }
    const invite = (s: (typeof senders)[number]) =>
      t.http
        .post(`/workspaces/${s.slug}/invites`)
        .set(s.auth)
        .send({ email: uniqueEmail('target') });
    for (const s of senders.slice(0, 2)) for (let i = 0; i < 2; i++) await invite(s).expect(201);
    await invite(senders[2]).expect(201);
    const refused = await invite(senders[2]);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      errorCode: 'threshold_exceeded',
      message: expect.stringMatching(
        /^Too many invite e-mails sent by this service in the last hour; retry in \d+ seconds$/,
      ),
      statusCode: 429,
    });
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(3500);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    const count = async (table: string) =>
      Number((await t.dataSource.query(`SELECT count(*) AS n FROM ${table}`))[0].n);
    expect(await count('invite_sends')).toBe(5);
    expect(await count('invites')).toBe(5);

    // Once the first e-mail has left the hour, one more may go.
    await t.dataSource.query(
      "UPDATE invite_sends SET created = now() - interval '61 minutes' WHERE id = (SELECT min(id) FROM invite_sends)",
    );
    await invite(senders[2]).expect(201);
    // Held back by the service's hour, not by its own allowance (it has sent none).
    const again = await invite(senders[3]);
    expect(again.status).toBe(429);
    expect(again.body.message).toMatch(/^Too many invite e-mails sent by this service in the last hour/);
  });
});
