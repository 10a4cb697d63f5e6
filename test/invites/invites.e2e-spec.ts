import { DatabasesService } from '../../src/databases/databases.service';
import { DeveloperKind } from '../../src/developers/developer.entity';
import { DevelopersService } from '../../src/developers/developers.service';
import { InvitesService } from '../../src/invites/invites.service';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { Queues } from '../../src/queues/queue-names';
import { createWorkspace } from '../databases/support';
import { publishedValidator } from '../support/published-validator';
import { freePort } from '../support/free-port';
import { withRowTrigger, withSlowRows } from '../support/slow-rows';
import { TestSmtpServer } from '../support/smtp';
import {
  createDeveloperWithToken,
  createTestApp,
  eventually,
  reconcile,
  TestApp,
  uniqueEmail,
  untilQueueIdle,
} from '../support/test-app';

type Auth = { Authorization: string };

describe('invites', () => {
  let smtp: TestSmtpServer;
  let t: TestApp;
  beforeAll(async () => {
    smtp = await TestSmtpServer.start();
    t = await createTestApp({ SMTP_URL: smtp.url, PUBLIC_URL: 'http://cp.test:3000' });
  });
  afterAll(async () => {
    await t.close();
    await smtp.close();
  });

  /** A programmatic invite (its code in the answer) of `email` to the workspace. */
  async function programmaticInvite(auth: Auth, slug: string, email: string): Promise<{ id: string; code: string }> {
    return (await t.http.post(`/workspaces/${slug}/invites`).set(auth).send({ email, programmatic: true }).expect(201))
      .body;
  }

  const inviteRow = async (id: string) =>
    (
      await t.dataSource.query(
        'SELECT state, email_sent_at, email_attempts, last_error, code_hash, code_ciphertext FROM invites WHERE id = $1',
        [id],
      )
    )[0];

  it('e-mails a working join link; the invitee joins and the state moves PENDING → SENT → VERIFIED', async () => {
    const owner = await createDeveloperWithToken(t.app);
    const ws = await createWorkspace(t, owner.auth);
    const inviteeEmail = uniqueEmail('invitee');
    const created = await t.http
      .post(`/workspaces/${ws.slug}/invites`)
      .set(owner.auth)
      .send({ email: inviteeEmail.toUpperCase() })
      .expect(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      sender: {
        id: owner.developer.id,
        email: owner.developer.email,
        kind: 'HUMAN',
        workspaces: [expect.objectContaining({ id: ws.id, slug: ws.slug })],
        databases: [],
      },
      email: inviteeEmail,
      workspace: expect.objectContaining({ id: ws.id, slug: ws.slug }),
      verificationState: 'EMAIL_PENDING',
      created: expect.any(String),
      updated: expect.any(String),
    });
    expect(created.body.code).toBeUndefined();

    const mail = await eventually(() => Promise.resolve(smtp.messagesTo(inviteeEmail)[0]));
    const link = /http:\/\/cp\.test:3000(\/invites\/accept\?code=([A-Za-z0-9_-]+)&proof=[A-Za-z0-9_-]+)/.exec(
      mail.decoded,
    );
    expect(link).not.toBeNull();
    const row = await eventually(async () => {
      const r = await inviteRow(created.body.id);
      return r.state === 'EMAIL_SENT' && r;
    });
    expect(row.email_sent_at).not.toBeNull();
    expect(row.code_ciphertext).toBeNull();
    expect(row.code_hash).not.toBe(link![2]);

    const page = await t.http.get(link![1]).expect(200);
    expect(page.text).toContain(ws.name);

    const invitee = await createDeveloperWithToken(t.app, { email: inviteeEmail });
    const joined = await t.http.post('/invites/accept').set(invitee.auth).send({ code: link![2] }).expect(200);
    expect(joined.body).toMatchObject({ id: ws.id, slug: ws.slug });
    await t.http.get(`/workspaces/${ws.slug}`).set(invitee.auth).expect(200);
    expect((await inviteRow(created.body.id)).state).toBe('VERIFIED');
    const list = await t.http
      .get(`/workspaces/${ws.slug}/invites?verificationState=VERIFIED`)
      .set(owner.auth)
      .expect(200);
    expect(list.body.map((i: { id: string }) => i.id)).toEqual([created.body.id]);

    const again = await t.http.post('/invites/accept').set(invitee.auth).send({ code: link![2] }).expect(400);
    expect(again.body.message).toMatch(/already been used/);
    expect(smtp.messagesTo(inviteeEmail)).toHaveLength(1);
  });

  it('returns the code for programmatic invites and refuses acceptance by another address', async () => {
    const owner = await createDeveloperWithToken(t.app);
    const ws = await createWorkspace(t, owner.auth);
    const email = uniqueEmail('prog');
    const res = await t.http
      .post(`/workspaces/${ws.slug}/invites`)
      .set(owner.auth)
      .send({ email, programmatic: true })
      .expect(201);
    expect(res.body.code).toEqual(expect.any(String));
    const stranger = await createDeveloperWithToken(t.app);
    const refused = await t.http.post('/invites/accept').set(stranger.auth).send({ code: res.body.code }).expect(403);
    expect(refused.body.errorCode).toBe('forbidden_operation');
    const invitee = await createDeveloperWithToken(t.app, { email: email.toUpperCase() });
    await t.http.post('/invites/accept').set(invitee.auth).send({ code: res.body.code }).expect(200);
  });

  it("withdraws a member's invites when the member is removed: their codes no longer join, their e-mails still owed are not sent", async () => {
    const owner = await createDeveloperWithToken(t.app);
    const ws = await createWorkspace(t, owner.auth);
    const insider = await createDeveloperWithToken(t.app);
    const joined = await programmaticInvite(owner.auth, ws.slug, insider.developer.email);
    await t.http.post('/invites/accept').set(insider.auth).send({ code: joined.code }).expect(200);
    // The insider invites a second address of their own, and someone by e-mail, whose message waits.
    const secondSelf = await createDeveloperWithToken(t.app);
    const comeback = await programmaticInvite(insider.auth, ws.slug, secondSelf.developer.email);
    const emails = t.app.get(JobDispatcher).queue(Queues.InviteEmail);
    await emails.pause(true);
    let owed: { id: string; email: string };
    try {
      owed = (
        await t.http
          .post(`/workspaces/${ws.slug}/invites`)
          .set(insider.auth)
          .send({ email: uniqueEmail('owed') })
          .expect(201)
      ).body;
      await t.http.delete(`/workspaces/${ws.slug}/developers/${insider.developer.id}`).set(owner.auth).expect(204);
    } finally {
      await emails.resume(true);
    }

    const withdrawn = {
      errorCode: 'bad_request',
      message: 'This invite was withdrawn: the member who sent it is no longer in the workspace',
      statusCode: 400,
    };
    const refused = await t.http.post('/invites/accept').set(secondSelf.auth).send({ code: comeback.code }).expect(400);
    expect(refused.body).toEqual(withdrawn);
    const page = await t.http.get(`/invites/accept?code=${comeback.code}`).expect(400);
    expect(page.text).toContain('no longer in the workspace');
    const members = await t.dataSource.query<{ developer_id: string }[]>(
      'SELECT developer_id FROM workspace_members WHERE workspace_id = $1',
      [ws.id],
    );
    expect(members).toEqual([{ developer_id: owner.developer.id }]);

    await reconcile(t.app);
    await untilQueueIdle(t.app, Queues.InviteEmail);
    expect(smtp.messagesTo(owed.email)).toEqual([]);
    expect(await inviteRow(owed.id)).toMatchObject({ state: 'EMAIL_PENDING', email_sent_at: null });
    // The remaining members still see both invites, and can delete them.
    const listed = await t.http.get(`/workspaces/${ws.slug}/invites`).set(owner.auth).expect(200);
    expect(listed.body.map((i: { id: string }) => i.id)).toEqual(expect.arrayContaining([comeback.id, owed.id]));
    await t.http.delete(`/workspaces/${ws.slug}/invites/${owed.id}`).set(owner.auth).expect(204);
  });

  it('refuses to invite a member or an address with a pending invite (409), and a bad address (400)', async () => {
    const owner = await createDeveloperWithToken(t.app);
    const ws = await createWorkspace(t, owner.auth);
    const member = await t.http
      .post(`/workspaces/${ws.slug}/invites`)
      .set(owner.auth)
      .send({ email: owner.developer.email })
      .expect(409);
    expect(member.body.errorCode).toBe('duplicate_entity');
    const email = uniqueEmail('twice');
    await t.http.post(`/workspaces/${ws.slug}/invites`).set(owner.auth).send({ email }).expect(201);
    const dup = await t.http
      .post(`/workspaces/${ws.slug}/invites`)
      .set(owner.auth)
      .send({ email: email.toUpperCase() })
      .expect(409);
    expect(dup.body).toMatchObject({
      errorCode: 'duplicate_entity',
      message: expect.stringContaining('already pending'),
    });
    const bad = await t.http
      .post(`/workspaces/${ws.slug}/invites`)
      .set(owner.auth)
      .send({ email: 'not-an-address' })
      .expect(400);
    expect(bad.body).toMatchObject({ errorCode: 'bad_request', message: expect.stringContaining('email') });
  });

  it('refuses (400) a quoted spelling of an address, which is delivered to the plain one: it would pass the member and pending checks and the per-address limit', async () => {
    const owner = await createDeveloperWithToken(t.app);
    const ws = await createWorkspace(t, owner.auth);
    const [local, domain] = owner.developer.email.split('@');
    for (const email of [
      `"${local}"@${domain}`,
      `" ${local}"@${domain}`,
      `"${local} "@${domain}`,
      `"\\${local}"@${domain}`,
    ]) {
      const res = await t.http.post(`/workspaces/${ws.slug}/invites`).set(owner.auth).send({ email }).expect(400);
      expect(res.body).toEqual({
        errorCode: 'bad_request',
        message: 'email must be a valid e-mail address (no quoted local part)',
        statusCode: 400,
      });
    }
    expect(await t.dataSource.query('SELECT id FROM invites WHERE workspace_id = $1', [ws.id])).toEqual([]);
    // Nor does an account get such an address (the CLI's developer:create and the join page make accounts).
    await expect(
      t.app.get(DevelopersService).create({ email: `"${local}"@${domain}`, kind: DeveloperKind.Api }),
    ).rejects.toMatchObject({ status: 400 });
  });

  it('lists invites with an optional state filter, and rejects an unknown state', async () => {
    const owner = await createDeveloperWithToken(t.app);
    const ws = await createWorkspace(t, owner.auth);
    const a = (
      await t.http.post(`/workspaces/${ws.slug}/invites`).set(owner.auth).send({ email: uniqueEmail() }).expect(201)
    ).body;
    const b = (
      await t.http.post(`/workspaces/${ws.slug}/invites`).set(owner.auth).send({ email: uniqueEmail() }).expect(201)
    ).body;
    await t.dataSource.query(`UPDATE invites SET expires_at = now() - interval '1 second' WHERE id = $1`, [b.id]);
    const all = await t.http.get(`/workspaces/${ws.slug}/invites`).set(owner.auth).expect(200);
    expect(all.body.map((i: { id: string }) => i.id)).toEqual([a.id, b.id]);
    const expired = await t.http
      .get(`/workspaces/${ws.slug}/invites?verificationState=EXPIRED`)
      .set(owner.auth)
      .expect(200);
    expect(expired.body).toEqual([expect.objectContaining({ id: b.id, verificationState: 'EXPIRED' })]);
    await t.http.get(`/workspaces/${ws.slug}/invites?verificationState=NOPE`).set(owner.auth).expect(400);
  });

  it('refuses expired, deleted and unknown codes', async () => {
    const owner = await createDeveloperWithToken(t.app);
    const ws = await createWorkspace(t, owner.auth);
    const email = uniqueEmail('late');
    const invitee = await createDeveloperWithToken(t.app, { email });
    const expired = await programmaticInvite(owner.auth, ws.slug, email);
    await t.dataSource.query(`UPDATE invites SET expires_at = now() - interval '1 second' WHERE id = $1`, [expired.id]);
    const res = await t.http.post('/invites/accept').set(invitee.auth).send({ code: expired.code }).expect(400);
    expect(res.body.message).toMatch(/expired/);

    const deleted = await programmaticInvite(owner.auth, ws.slug, email);
    await t.http.delete(`/workspaces/${ws.slug}/invites/${deleted.id}`).set(owner.auth).expect(204);
    expect(await t.dataSource.query('SELECT id FROM invites WHERE id = $1', [deleted.id])).toEqual([]);
    await t.http.post('/invites/accept').set(invitee.auth).send({ code: deleted.code }).expect(404);
    await t.http.post('/invites/accept').set(invitee.auth).send({ code: 'nonsense' }).expect(404);
    await t.http.delete(`/workspaces/${ws.slug}/invites/${deleted.id}`).set(owner.auth).expect(404);
    await t.http.get(`/workspaces/${ws.slug}`).set(invitee.auth).expect(403);
  });

  it('lets a code be accepted once when two acceptances arrive together: one joins, the other is refused', async () => {
    const owner = await createDeveloperWithToken(t.app);
    const ws = await createWorkspace(t, owner.auth);
    const email = uniqueEmail('twice');
    const invitee = await createDeveloperWithToken(t.app, { email });
    const invite = await programmaticInvite(owner.auth, ws.slug, email);
    // Marking this invite used waits 0.3 s inside the acceptance's transaction: the other
    // acceptance reads it meanwhile, and only the invite's row lock makes it wait for the outcome.
    const accept = () => t.http.post('/invites/accept').set(invitee.auth).send({ code: invite.code });
    const answers = await withSlowRows(
      t.dataSource,
      {
        table: 'invites',
        on: 'UPDATE',
        when: `OLD.id = '${invite.id}'::uuid AND NEW.state = 'VERIFIED'`,
        seconds: 0.3,
      },
      () => Promise.all([accept(), accept()]),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
    expect(answers.find((a) => a.status === 200)!.body).toMatchObject({ id: ws.id, slug: ws.slug });
    expect(answers.find((a) => a.status === 400)!.body).toEqual({
      errorCode: 'bad_request',
      message: 'This invite has already been used',
      statusCode: 400,
    });
    const members = await t.dataSource.query<{ developer_id: string }[]>(
      'SELECT developer_id FROM workspace_members WHERE workspace_id = $1 ORDER BY created',
      [ws.id],
    );
    expect(members.map((m) => m.developer_id)).toEqual([owner.developer.id, invitee.developer.id]);
    const [row] = await t.dataSource.query('SELECT state, accepted_by FROM invites WHERE id = $1', [invite.id]);
    expect(row).toEqual({ state: 'VERIFIED', accepted_by: invitee.developer.id });
  });

  it('never sends a second message for the same invite, however often the job runs', async () => {
    const owner = await createDeveloperWithToken(t.app);
    const ws = await createWorkspace(t, owner.auth);
    const email = uniqueEmail('once');
    const invite = (await t.http.post(`/workspaces/${ws.slug}/invites`).set(owner.auth).send({ email }).expect(201))
      .body;
    await eventually(async () => (await inviteRow(invite.id)).state === 'EMAIL_SENT');
    const service = t.app.get(InvitesService);
    expect(await Promise.all([service.deliverEmail(invite.id), service.deliverEmail(invite.id)])).toEqual([
      'skipped',
      'skipped',
    ]);
    await reconcile(t.app);
    await untilQueueIdle(t.app, Queues.InviteEmail);
    expect(smtp.messagesTo(email)).toHaveLength(1);
  });

  describe("an invite's sender", () => {
    type Member = Awaited<ReturnType<typeof createDeveloperWithToken>>;
    type SenderBody = { id: string; email: string; kind: string; workspaces: { id: string }[]; databases: string[] };
    type InviteBody = { id: string; sender: SenderBody };
    const matches = publishedValidator();

    const join = (workspaceId: string, member: Member) =>
      t.dataSource.query('INSERT INTO workspace_members (workspace_id, developer_id) VALUES ($1, $2)', [
        workspaceId,
        member.developer.id,
      ]);
    const createDatabase = async (slug: string, auth: Auth): Promise<string> =>
      (
        await t.http
          .post(`/workspaces/${slug}/databases`)
          .set(auth)
          .send({ databaseName: `db_${Math.random().toString(36).slice(2, 10)}`, region: 'AWS_US_WEST_2' })
          .expect(201)
      ).body.id;
    const invite = async (slug: string, auth: Auth): Promise<InviteBody> =>
      (
        await t.http
          .post(`/workspaces/${slug}/invites`)
          .set(auth)
          .send({ email: uniqueEmail('sent') })
          .expect(201)
      ).body;
    const listed = async (slug: string, auth: Auth): Promise<InviteBody[]> =>
      (await t.http.get(`/workspaces/${slug}/invites`).set(auth).expect(200)).body;

    /** The sender in a shared workspace (with a database) and one of their own (with a database), and a colleague in the shared one only. */
    async function senderWithPrivateWorkspace() {
      const sender = await createDeveloperWithToken(t.app);
      const colleague = await createDeveloperWithToken(t.app);
      const shared = await createWorkspace(t, sender.auth);
      await join(shared.id, colleague);
      const own = await createWorkspace(t, sender.auth);
      const sharedDb = await createDatabase(shared.slug, sender.auth);
      const ownDb = await createDatabase(own.slug, sender.auth);
      return { sender, colleague, shared, own, sharedDb, ownDb };
    }

    it('is a Developer (published DeveloperInvite); its sender, who created it, sees all their own workspaces and databases', async () => {
      const { sender, shared, own, sharedDb, ownDb } = await senderWithPrivateWorkspace();
      const created = await invite(shared.slug, sender.auth);
      expect(matches('DeveloperInvite', created)).toBe(true);
      expect(created.sender).toEqual({
        id: sender.developer.id,
        email: sender.developer.email,
        kind: 'HUMAN',
        workspaces: [expect.objectContaining({ id: shared.id }), expect.objectContaining({ id: own.id })],
        databases: [sharedDb, ownDb],
      });
      const [mine] = await listed(shared.slug, sender.auth);
      expect(mine.sender).toEqual(created.sender);
    });

    it('listed by another member, shows only the workspaces and databases that member shares with the sender', async () => {
      const { sender, colleague, shared, own, sharedDb, ownDb } = await senderWithPrivateWorkspace();
      const created = await invite(shared.slug, sender.auth);
      const list = await listed(shared.slug, colleague.auth);
      expect(list.map((i) => i.id)).toEqual([created.id]);
      for (const i of list) expect(matches('DeveloperInvite', i)).toBe(true);
      expect(list[0].sender).toEqual({
        id: sender.developer.id,
        email: sender.developer.email,
        kind: 'HUMAN',
        workspaces: [expect.objectContaining({ id: shared.id, slug: shared.slug })],
        databases: [sharedDb],
      });
      const text = JSON.stringify(list);
      for (const hidden of [own.id, own.slug, ownDb]) expect(text).not.toContain(hidden);
      // As the workspace's developer list shows the sender to the same member.
      const developers = await t.http.get(`/workspaces/${shared.slug}/developers`).set(colleague.auth).expect(200);
      expect(developers.body).toContainEqual(list[0].sender);
    });

    it('removed from the workspace since, shows no workspace or database of it, nor of their own', async () => {
      const { sender, colleague, shared, own } = await senderWithPrivateWorkspace();
      const created = await invite(shared.slug, sender.auth);
      await t.http
        .delete(`/workspaces/${shared.slug}/developers/${sender.developer.id}`)
        .set(colleague.auth)
        .expect(204);
      const list = await listed(shared.slug, colleague.auth);
      expect(list).toEqual([
        expect.objectContaining({
          id: created.id,
          sender: {
            id: sender.developer.id,
            email: sender.developer.email,
            kind: 'HUMAN',
            workspaces: [],
            databases: [],
          },
        }),
      ]);
      expect(JSON.stringify(list)).not.toContain(own.id);
    });

    it('deleted since, shows who it was but no workspace or database, even those the viewer shared with them', async () => {
      const { sender, colleague, shared } = await senderWithPrivateWorkspace();
      const created = await invite(shared.slug, sender.auth);
      await t.dataSource.query('UPDATE developers SET deleted = now() WHERE id = $1', [sender.developer.id]);
      // Still a row of workspace_members: only the developer is marked deleted.
      expect(
        await t.dataSource.query('SELECT 1 FROM workspace_members WHERE workspace_id = $1 AND developer_id = $2', [
          shared.id,
          sender.developer.id,
        ]),
      ).toHaveLength(1);
      const list = await listed(shared.slug, colleague.auth);
      expect(list).toEqual([
        expect.objectContaining({
          id: created.id,
          sender: {
            id: sender.developer.id,
            email: sender.developer.email,
            kind: 'HUMAN',
            workspaces: [],
            databases: [],
          },
        }),
      ]);
    });

    it("reads the senders' workspaces and databases once per list, however many invites and senders", async () => {
      const { sender, colleague, shared } = await senderWithPrivateWorkspace();
      for (let i = 0; i < 3; i++) {
        await invite(shared.slug, sender.auth);
        await invite(shared.slug, colleague.auth);
      }
      const workspacesOf = jest.spyOn(t.app.get(WorkspacesService), 'workspacesOf');
      const idsByWorkspace = jest.spyOn(t.app.get(DatabasesService), 'idsByWorkspace');
      try {
        const list = await listed(shared.slug, colleague.auth);
        expect(list).toHaveLength(6);
        expect(new Set(list.map((i) => i.sender.id))).toEqual(new Set([sender.developer.id, colleague.developer.id]));
        expect(workspacesOf).toHaveBeenCalledTimes(1);
        expect(idsByWorkspace).toHaveBeenCalledTimes(1);
      } finally {
        workspacesOf.mockRestore();
        idsByWorkspace.mockRestore();
      }
    });
  });
});

describe('invite e-mail whose record meets a lost metadata connection', () => {
  it('sends one message: recording it is retried with the lease kept, not taken as a failed send', async () => {
    const smtp = await TestSmtpServer.start();
    const t = await createTestApp({ SMTP_URL: smtp.url, JOB_BACKOFF_MS: '100' });
    try {
      const owner = await createDeveloperWithToken(t.app);
      const ws = await createWorkspace(t, owner.auth);
      const email = uniqueEmail('lost-record');
      // The first write recording this address's e-mail as sent loses its connection (the server
      // ends the session, as a restart or a failover does), after the message went out.
      await withRowTrigger(
        t.dataSource,
        {
          table: 'invites',
          on: 'UPDATE',
          when: `NEW.email = '${email}' AND OLD.email_sent_at IS NULL AND NEW.email_sent_at IS NOT NULL`,
          statements: 'PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5);',
          firstOnly: true,
        },
        async (hits) => {
          const invite = (
            await t.http.post(`/workspaces/${ws.slug}/invites`).set(owner.auth).send({ email }).expect(201)
          ).body;
          const sent = await eventually(async () => {
            const [row] = await t.dataSource.query(
              'SELECT state, email_attempts, last_error, email_lease_until FROM invites WHERE id = $1',
              [invite.id],
            );
            return row.state === 'EMAIL_SENT' && row;
          });
          expect(sent).toEqual({ state: 'EMAIL_SENT', email_attempts: 1, last_error: null, email_lease_until: null });
          expect(await hits()).toBe(2); // the lost write, and the retry that recorded it
        },
      );
      await reconcile(t.app);
      await untilQueueIdle(t.app, Queues.InviteEmail);
      expect(smtp.messagesTo(email)).toHaveLength(1);
    } finally {
      await t.close();
      await smtp.close();
    }
  });
});

describe('invite e-mail from a slow SMTP server', () => {
  it('holds no lock while the message goes out: the invite can be deleted meanwhile, and a second job skips at once', async () => {
    const smtp = await TestSmtpServer.start();
    smtp.holdMs = 4000;
    const t = await createTestApp({ SMTP_URL: smtp.url });
    try {
      const owner = await createDeveloperWithToken(t.app);
      const ws = await createWorkspace(t, owner.auth);
      const invite = (
        await t.http
          .post(`/workspaces/${ws.slug}/invites`)
          .set(owner.auth)
          .send({ email: uniqueEmail('slow') })
          .expect(201)
      ).body;
      await eventually(async () => {
        const [row] = await t.dataSource.query('SELECT email_lease_until FROM invites WHERE id = $1', [invite.id]);
        return row.email_lease_until !== null;
      });

      const started = Date.now();
      expect(await t.app.get(InvitesService).deliverEmail(invite.id)).toBe('skipped');
      await t.http.delete(`/workspaces/${ws.slug}/invites/${invite.id}`).set(owner.auth).expect(204);
      expect(Date.now() - started).toBeLessThan(2000);
      expect(await t.dataSource.query('SELECT id FROM invites WHERE id = $1', [invite.id])).toEqual([]);
    } finally {
      await t.close();
      await smtp.close();
    }
  });
});

describe('invite e-mail while the SMTP server is down', () => {
  it('keeps the invite EMAIL_PENDING with the failure recorded, then delivers exactly once when the server is back', async () => {
    const smtp = new TestSmtpServer(await freePort()); // a known port with nothing listening yet
    const t = await createTestApp({ SMTP_URL: smtp.url, JOB_BACKOFF_MS: '300' });
    try {
      const owner = await createDeveloperWithToken(t.app);
      const ws = await createWorkspace(t, owner.auth);
      const email = uniqueEmail('retry');
      const invite = (await t.http.post(`/workspaces/${ws.slug}/invites`).set(owner.auth).send({ email }).expect(201))
        .body;
      const failed = await eventually(async () => {
        const [row] = await t.dataSource.query('SELECT state, email_attempts, last_error FROM invites WHERE id = $1', [
          invite.id,
        ]);
        return row.email_attempts >= 1 && row;
      });
      expect(failed.state).toBe('EMAIL_PENDING');
      expect(failed.last_error).toMatch(/^email_send_failure: /);

      await smtp.listen();
      const sent = await eventually(async () => {
        const [row] = await t.dataSource.query('SELECT state, last_error FROM invites WHERE id = $1', [invite.id]);
        return row.state === 'EMAIL_SENT' && row;
      }, 30000);
      expect(sent.last_error).toBeNull();
      await reconcile(t.app);
      await untilQueueIdle(t.app, Queues.InviteEmail);
      expect(smtp.messagesTo(email)).toHaveLength(1);
    } finally {
      await t.close();
      await smtp.close();
    }
  });
});
