import { randomUUID } from 'node:crypto';
import { Auth, createWorkspace } from '../databases/support';
import { withSlowRows } from '../support/slow-rows';
import { createDeveloperWithToken, createTestApp, eventually, TestApp } from '../support/test-app';

interface SubscriptionBody {
  workspace: string;
  level: string;
  validFrom: string;
  validTo?: string;
  subscriptionId: string;
}

interface SubscriptionRow {
  id: string;
  level: string;
  valid_from: Date;
  valid_to: Date | null;
  changed_by: string | null;
}

const LEVEL_ERROR = { errorCode: 'bad_request', message: 'level must be one of: FREE, PRO', statusCode: 400 };
const inHours = (hours: number) => new Date(Date.now() + hours * 3_600_000).toISOString();

describe('workspace subscription', () => {
  let t: TestApp;
  let auth: Auth;
  let developerId: string;
  beforeAll(async () => {
    t = await createTestApp();
    const dev = await createDeveloperWithToken(t.app);
    auth = dev.auth;
    developerId = dev.developer.id;
  });
  afterAll(() => t.close());

  const path = (slug: string) => `/workspaces/${slug}/subscription`;

  async function rows(workspaceId: string): Promise<SubscriptionRow[]> {
    return t.dataSource.query(
      'SELECT id, level, valid_from, valid_to, changed_by FROM subscriptions WHERE workspace_id = $1 ORDER BY valid_from, created',
      [workspaceId],
    );
  }

  async function current(slug: string): Promise<SubscriptionBody> {
    return (await t.http.get(path(slug)).set(auth).expect(200)).body as SubscriptionBody;
  }

  describe('a new workspace', () => {
    it('holds FREE from its creation: GET answers the row, written once when read twice at once', async () => {
      const ws = await createWorkspace(t, auth);
      // Writing this workspace's subscription row waits 0.3 s inside its transaction: both requests
      // read the rows before the first write commits, and only the workspace's subscription lock
      // makes the later one wait for it.
      const [first, second] = await withSlowRows(
        t.dataSource,
        { table: 'subscriptions', on: 'INSERT', when: `NEW.workspace_id = '${ws.id}'::uuid`, seconds: 0.3 },
        () => Promise.all([current(ws.slug), current(ws.slug)]),
      );
      expect(first).toEqual({
        workspace: ws.slug,
        level: 'FREE',
        validFrom: new Date((ws as unknown as { created: string }).created).toISOString(),
        subscriptionId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      });
      expect(second).toEqual(first);
      expect(await rows(ws.id)).toEqual([
        {
          id: first.subscriptionId,
          level: 'FREE',
          valid_from: new Date(first.validFrom),
          valid_to: null,
          changed_by: null,
        },
      ]);
    });

    it('holds FREE from its creation, or from now where the metadata database’s clock runs ahead of the service’s, and starts PRO after it', async () => {
      const ws = await createWorkspace(t, auth);
      // `created` comes from the database's clock, the subscriptions' times from the service's: a
      // database clock a minute ahead, as the workspace would be stamped then.
      await t.dataSource.query(`UPDATE workspaces SET created = now() + interval '1 minute' WHERE id = $1`, [ws.id]);
      const before = Date.now();
      const free = await current(ws.slug);
      expect(free).toMatchObject({ workspace: ws.slug, level: 'FREE' });
      expect(new Date(free.validFrom).getTime()).toBeGreaterThanOrEqual(before);
      expect(new Date(free.validFrom).getTime()).toBeLessThanOrEqual(Date.now());
      const pro = (await t.http.post(path(ws.slug)).set(auth).send({ level: 'PRO' }).expect(201))
        .body as SubscriptionBody;
      expect(await rows(ws.id)).toEqual([
        expect.objectContaining({
          id: free.subscriptionId,
          level: 'FREE',
          valid_from: new Date(free.validFrom),
          valid_to: new Date(pro.validFrom),
        }),
        expect.objectContaining({ id: pro.subscriptionId, level: 'PRO', valid_to: null }),
      ]);
      expect(new Date(pro.validFrom).getTime()).toBeGreaterThanOrEqual(new Date(free.validFrom).getTime());
    });

    it('POST {level: PRO} starts PRO now: the FREE row held since creation ends then, as a change effective now', async () => {
      const ws = await createWorkspace(t, auth);
      const before = Date.now();
      const res = await t.http.post(path(ws.slug)).set(auth).send({ level: 'PRO' }).expect(201);
      const pro = res.body as SubscriptionBody;
      expect(pro).toEqual({
        workspace: ws.slug,
        level: 'PRO',
        validFrom: expect.any(String),
        subscriptionId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      });
      expect(new Date(pro.validFrom).getTime()).toBeGreaterThanOrEqual(before);
      expect(await current(ws.slug)).toEqual(pro);
      expect(await rows(ws.id)).toEqual([
        expect.objectContaining({
          level: 'FREE',
          valid_from: new Date((ws as unknown as { created: string }).created),
          valid_to: new Date(pro.validFrom),
          changed_by: null,
        }),
        expect.objectContaining({ id: pro.subscriptionId, level: 'PRO', valid_to: null, changed_by: developerId }),
      ]);
      // Started by a client: a second POST is refused.
      const again = await t.http.post(path(ws.slug)).set(auth).send({ level: 'PRO' }).expect(409);
      expect(again.body).toEqual({
        errorCode: 'duplicate_entity',
        message: `The workspace already has a current subscription (PRO since ${pro.validFrom}); change its level with PUT`,
        statusCode: 409,
      });
      expect(await rows(ws.id)).toHaveLength(2);
    });

    it('POST {level: FREE} keeps the FREE row held since creation (201), after which POST answers 409', async () => {
      const ws = await createWorkspace(t, auth);
      const free = await current(ws.slug);
      const res = await t.http.post(path(ws.slug)).set(auth).send({ level: 'free' }).expect(201);
      expect(res.body).toEqual(free);
      expect(await rows(ws.id)).toEqual([
        {
          id: free.subscriptionId,
          level: 'FREE',
          valid_from: new Date(free.validFrom),
          valid_to: null,
          changed_by: null,
        },
      ]);
      const again = await t.http.post(path(ws.slug)).set(auth).send({ level: 'PRO' }).expect(409);
      expect(again.body).toEqual({
        errorCode: 'duplicate_entity',
        message: `The workspace already has a current subscription (FREE since ${free.validFrom}); change its level with PUT`,
        statusCode: 409,
      });
      expect(await current(ws.slug)).toEqual(free);
    });

    it('POSTed twice at once: one 201 and one 409, and no two rows overlap', async () => {
      const ws = await createWorkspace(t, auth);
      await current(ws.slug);
      const start = () => t.http.post(path(ws.slug)).set(auth).send({ level: 'PRO' });
      // Updating this workspace's subscription rows waits 0.3 s inside its transaction: both requests
      // read the current row before the first write commits, and only the workspace's subscription
      // lock makes the later one wait for it.
      const answers = await withSlowRows(
        t.dataSource,
        { table: 'subscriptions', on: 'UPDATE', when: `NEW.workspace_id = '${ws.id}'::uuid`, seconds: 0.3 },
        () => Promise.all([start(), start()]),
      );
      expect(answers.map((r) => r.status).sort()).toEqual([201, 409]);
      const pro = answers.find((r) => r.status === 201)!.body as SubscriptionBody;
      expect(answers.find((r) => r.status === 409)!.body).toMatchObject({ errorCode: 'duplicate_entity' });
      expect(await rows(ws.id)).toEqual([
        expect.objectContaining({ level: 'FREE', valid_to: new Date(pro.validFrom) }),
        expect.objectContaining({ id: pro.subscriptionId, level: 'PRO', valid_to: null }),
      ]);
    });

    it('once a client changed the level, even back to FREE, POST answers 409', async () => {
      const ws = await createWorkspace(t, auth);
      const free = await current(ws.slug);
      // A change scheduled and cancelled: the row is as it was, but a client has written it.
      await t.http
        .put(path(ws.slug))
        .set(auth)
        .send({ level: 'PRO', validFrom: inHours(1) })
        .expect(200);
      await t.http.put(path(ws.slug)).set(auth).send({ level: 'FREE' }).expect(200);
      const res = await t.http.post(path(ws.slug)).set(auth).send({ level: 'PRO' }).expect(409);
      expect(res.body).toEqual({
        errorCode: 'duplicate_entity',
        message: `The workspace already has a current subscription (FREE since ${free.validFrom}); change its level with PUT`,
        statusCode: 409,
      });
      expect((await rows(ws.id)).map((r) => [r.id, r.level, r.valid_to])).toEqual([
        [free.subscriptionId, 'FREE', null],
      ]);
    });

    it('once a client scheduled its close, POST answers 409 while the row lasts', async () => {
      const ws = await createWorkspace(t, auth);
      const free = await current(ws.slug);
      const end = inHours(1);
      await t.http
        .delete(`${path(ws.slug)}/${free.subscriptionId}`)
        .query({ validTo: end })
        .set(auth)
        .expect(200);
      await t.http.post(path(ws.slug)).set(auth).send({ level: 'PRO' }).expect(409);
      expect((await rows(ws.id)).map((r) => [r.id, r.valid_to])).toEqual([[free.subscriptionId, new Date(end)]]);
    });
  });

  describe('changing the level', () => {
    it('effective now: closes the current row and opens one at the new level', async () => {
      const ws = await createWorkspace(t, auth);
      const free = await current(ws.slug);
      const before = Date.now();
      const res = await t.http.put(path(ws.slug)).set(auth).send({ level: 'PRO' }).expect(200);
      const pro = res.body as SubscriptionBody;
      expect(pro).toEqual({
        workspace: ws.slug,
        level: 'PRO',
        validFrom: expect.any(String),
        subscriptionId: expect.any(String),
      });
      expect(pro.subscriptionId).not.toBe(free.subscriptionId);
      expect(new Date(pro.validFrom).getTime()).toBeGreaterThanOrEqual(before);
      expect(await current(ws.slug)).toEqual(pro);
      expect(await rows(ws.id)).toEqual([
        expect.objectContaining({ id: free.subscriptionId, level: 'FREE', valid_to: new Date(pro.validFrom) }),
        expect.objectContaining({ id: pro.subscriptionId, level: 'PRO', valid_to: null, changed_by: developerId }),
      ]);
    });

    it('reads the body as JSON whatever its Content-Type (published as */*)', async () => {
      const ws = await createWorkspace(t, auth);
      const res = await t.http
        .put(path(ws.slug))
        .set(auth)
        .set('Content-Type', 'text/plain')
        .send(JSON.stringify({ level: 'PRO' }))
        .expect(200);
      expect(res.body.level).toBe('PRO');
      const malformed = await t.http
        .put(path(ws.slug))
        .set(auth)
        .set('Content-Type', 'text/plain')
        .send('{level')
        .expect(400);
      expect(malformed.body).toEqual({ errorCode: 'bad_request', message: 'Malformed JSON body', statusCode: 400 });
    });

    it('accepts levels in any case', async () => {
      const ws = await createWorkspace(t, auth);
      const res = await t.http.put(path(ws.slug)).set(auth).send({ level: ' pro ' }).expect(200);
      expect(res.body.level).toBe('PRO');
    });

    it('at a future validFrom: the current row ends then and the next one is pending until then', async () => {
      const ws = await createWorkspace(t, auth);
      const free = await current(ws.slug);
      const at = inHours(1);
      const res = await t.http.put(path(ws.slug)).set(auth).send({ level: 'PRO', validFrom: at }).expect(200);
      expect(res.body).toEqual({ workspace: ws.slug, level: 'PRO', validFrom: at, subscriptionId: expect.any(String) });
      expect(await current(ws.slug)).toEqual({ ...free, validTo: at });

      const history = await t.http
        .get(`${path(ws.slug)}/history`)
        .set(auth)
        .expect(200);
      expect(history.body).toEqual([res.body, { ...free, validTo: at }]);
    });

    it('again before a scheduled change takes effect: the new change replaces it', async () => {
      const ws = await createWorkspace(t, auth);
      const free = await current(ws.slug);
      const first = (
        await t.http
          .put(path(ws.slug))
          .set(auth)
          .send({ level: 'PRO', validFrom: inHours(1) })
          .expect(200)
      ).body as SubscriptionBody;
      const later = inHours(2);
      const second = (await t.http.put(path(ws.slug)).set(auth).send({ level: 'PRO', validFrom: later }).expect(200))
        .body as SubscriptionBody;
      expect(second.subscriptionId).not.toBe(first.subscriptionId);
      const stored = await rows(ws.id);
      expect(stored.map((r) => [r.id, r.level, r.valid_to])).toEqual([
        [free.subscriptionId, 'FREE', new Date(later)],
        [second.subscriptionId, 'PRO', null],
      ]);
    });

    it('to the current level cancels a scheduled change', async () => {
      const ws = await createWorkspace(t, auth);
      const free = await current(ws.slug);
      await t.http
        .put(path(ws.slug))
        .set(auth)
        .send({ level: 'PRO', validFrom: inHours(1) })
        .expect(200);
      const res = await t.http.put(path(ws.slug)).set(auth).send({ level: 'FREE' }).expect(200);
      expect(res.body).toEqual(free);
      expect((await rows(ws.id)).map((r) => [r.id, r.valid_to])).toEqual([[free.subscriptionId, null]]);
    });

    it('a scheduled change takes effect when its time passes', async () => {
      const ws = await createWorkspace(t, auth);
      const free = await current(ws.slug);
      const pending = (
        await t.http
          .put(path(ws.slug))
          .set(auth)
          .send({ level: 'PRO', validFrom: inHours(1) })
          .expect(200)
      ).body as SubscriptionBody;
      // Two hours pass.
      await t.dataSource.query(
        `UPDATE subscriptions SET valid_from = valid_from - interval '2 hours', valid_to = valid_to - interval '2 hours'
          WHERE workspace_id = $1`,
        [ws.id],
      );
      const now = await current(ws.slug);
      expect(now).toMatchObject({ level: 'PRO', subscriptionId: pending.subscriptionId });
      expect(now.validTo).toBeUndefined();
      expect((await rows(ws.id)).map((r) => [r.id, r.level])).toEqual([
        [free.subscriptionId, 'FREE'],
        [pending.subscriptionId, 'PRO'],
      ]);
    });

    it('asked twice at once: one row at the new level, which both answers name', async () => {
      const ws = await createWorkspace(t, auth);
      const free = await current(ws.slug);
      const change = () => t.http.put(path(ws.slug)).set(auth).send({ level: 'PRO' });
      // Updating this workspace's subscription rows waits 0.3 s inside its transaction: both requests
      // read the rows before the first write commits, and only the workspace's subscription lock
      // makes the later one wait for it.
      const [first, second] = await withSlowRows(
        t.dataSource,
        { table: 'subscriptions', on: 'UPDATE', when: `NEW.workspace_id = '${ws.id}'::uuid`, seconds: 0.3 },
        () => Promise.all([change(), change()]),
      );
      expect([first.status, second.status]).toEqual([200, 200]);
      const pro = first.body as SubscriptionBody;
      expect(pro).toMatchObject({ workspace: ws.slug, level: 'PRO' });
      expect(second.body).toEqual(pro);
      expect(await current(ws.slug)).toEqual(pro);
      expect(await rows(ws.id)).toEqual([
        expect.objectContaining({ id: free.subscriptionId, level: 'FREE', valid_to: new Date(pro.validFrom) }),
        expect.objectContaining({ id: pro.subscriptionId, level: 'PRO', valid_to: null, changed_by: developerId }),
      ]);
    });

    it('a change scheduled a moment ahead becomes current on its own', async () => {
      const ws = await createWorkspace(t, auth);
      const at = new Date(Date.now() + 1500).toISOString();
      const pending = (await t.http.put(path(ws.slug)).set(auth).send({ level: 'PRO', validFrom: at }).expect(200))
        .body as SubscriptionBody;
      const now = await eventually(async () => {
        const body = await current(ws.slug);
        return body.level === 'PRO' ? body : null;
      });
      expect(now).toEqual(pending);
    });
  });

  describe('closing and starting', () => {
    it('closing the current row now leaves no active subscription; POST starts a new one', async () => {
      const ws = await createWorkspace(t, auth);
      const free = await current(ws.slug);
      const closed = await t.http
        .delete(`${path(ws.slug)}/${free.subscriptionId}`)
        .set(auth)
        .expect(200);
      expect(closed.body).toEqual({ ...free, validTo: expect.any(String) });

      const missing = await t.http.get(path(ws.slug)).set(auth).expect(404);
      expect(missing.body).toEqual({
        errorCode: 'entity_not_found',
        message: 'No active subscription',
        statusCode: 404,
      });
      const noChange = await t.http.put(path(ws.slug)).set(auth).send({ level: 'PRO' }).expect(404);
      expect(noChange.body).toEqual({
        errorCode: 'entity_not_found',
        message: 'No active subscription; start one with POST',
        statusCode: 404,
      });

      const started = await t.http.post(path(ws.slug)).set(auth).send({ level: 'PRO' }).expect(201);
      expect(started.body).toEqual({
        workspace: ws.slug,
        level: 'PRO',
        validFrom: expect.any(String),
        subscriptionId: expect.any(String),
      });
      expect(await current(ws.slug)).toEqual(started.body);
      expect((await rows(ws.id)).map((r) => [r.level, r.valid_to === null, r.changed_by])).toEqual([
        ['FREE', false, null],
        ['PRO', true, developerId],
      ]);
      await t.http.post(path(ws.slug)).set(auth).send({ level: 'FREE' }).expect(409);
    });

    it('closing at a future time keeps the row current until then and drops a scheduled change', async () => {
      const ws = await createWorkspace(t, auth);
      const free = await current(ws.slug);
      await t.http
        .put(path(ws.slug))
        .set(auth)
        .send({ level: 'PRO', validFrom: inHours(1) })
        .expect(200);
      const end = inHours(3);
      const res = await t.http
        .delete(`${path(ws.slug)}/${free.subscriptionId}`)
        .query({ validTo: end })
        .set(auth)
        .expect(200);
      expect(res.body).toEqual({ ...free, validTo: end });
      expect(await current(ws.slug)).toEqual({ ...free, validTo: end });
      expect((await rows(ws.id)).map((r) => r.id)).toEqual([free.subscriptionId]);
    });

    it('after a scheduled close, a change holds the new level until the close; one from the close on is refused; the current level cancels the close', async () => {
      const ws = await createWorkspace(t, auth);
      const free = await current(ws.slug);
      const end = inHours(3);
      await t.http
        .delete(`${path(ws.slug)}/${free.subscriptionId}`)
        .query({ validTo: end })
        .set(auth)
        .expect(200);

      // From the close on: it would bill past the end.
      for (const validFrom of [end, inHours(4)]) {
        const late = await t.http.put(path(ws.slug)).set(auth).send({ level: 'PRO', validFrom });
        expect(late.status).toBe(400);
        expect(late.body).toEqual({
          errorCode: 'bad_request',
          message: `Subscription ${free.subscriptionId} is closed from ${end}; a change from then on would come after its end (change to FREE to cancel the close, or start a new subscription with POST once it has ended)`,
          statusCode: 400,
        });
      }
      expect((await rows(ws.id)).map((r) => [r.id, r.level, r.valid_to])).toEqual([
        [free.subscriptionId, 'FREE', new Date(end)],
      ]);

      // Before it: PRO from then until the close.
      const at = inHours(1);
      const pro = (await t.http.put(path(ws.slug)).set(auth).send({ level: 'PRO', validFrom: at }).expect(200))
        .body as SubscriptionBody;
      expect(pro).toEqual({
        workspace: ws.slug,
        level: 'PRO',
        validFrom: at,
        validTo: end,
        subscriptionId: expect.any(String),
      });
      expect((await rows(ws.id)).map((r) => [r.id, r.level, r.valid_from, r.valid_to])).toEqual([
        [free.subscriptionId, 'FREE', new Date(free.validFrom), new Date(at)],
        [pro.subscriptionId, 'PRO', new Date(at), new Date(end)],
      ]);
      // That was a scheduled change, not a close: changing it again moves it.
      const later = inHours(2);
      const moved = (await t.http.put(path(ws.slug)).set(auth).send({ level: 'PRO', validFrom: later }).expect(200))
        .body as SubscriptionBody;
      expect(moved).toMatchObject({ validFrom: later, validTo: end });

      // The current level cancels the pending change and the close.
      expect((await t.http.put(path(ws.slug)).set(auth).send({ level: 'FREE' }).expect(200)).body).toEqual(free);
      expect((await rows(ws.id)).map((r) => [r.id, r.valid_to])).toEqual([[free.subscriptionId, null]]);
    });

    it('refuses to close a row that ended or has not started, or an unknown one', async () => {
      const ws = await createWorkspace(t, auth);
      const free = await current(ws.slug);
      const pro = (await t.http.put(path(ws.slug)).set(auth).send({ level: 'PRO' }).expect(200))
        .body as SubscriptionBody;
      const ended = await t.http
        .delete(`${path(ws.slug)}/${free.subscriptionId}`)
        .set(auth)
        .expect(400);
      expect(ended.body).toEqual({
        errorCode: 'bad_request',
        message: expect.stringContaining(`Subscription ${free.subscriptionId} already ended at`),
        statusCode: 400,
      });
      const pending = (
        await t.http
          .put(path(ws.slug))
          .set(auth)
          .send({ level: 'FREE', validFrom: inHours(1) })
          .expect(200)
      ).body as SubscriptionBody;
      const notStarted = await t.http
        .delete(`${path(ws.slug)}/${pending.subscriptionId}`)
        .set(auth)
        .expect(400);
      expect(notStarted.body.message).toContain('has not started yet');

      for (const id of [randomUUID(), 'not-a-uuid']) {
        const res = await t.http
          .delete(`${path(ws.slug)}/${id}`)
          .set(auth)
          .expect(404);
        expect(res.body).toEqual({
          errorCode: 'entity_not_found',
          message: 'No such subscription in this workspace',
          statusCode: 404,
        });
      }
      // A row of another workspace is unknown here.
      const other = await createWorkspace(t, auth);
      const foreign = await current(other.slug);
      await t.http
        .delete(`${path(ws.slug)}/${foreign.subscriptionId}`)
        .set(auth)
        .expect(404);

      const past = await t.http
        .delete(`${path(ws.slug)}/${pro.subscriptionId}`)
        .query({ validTo: '2020-01-01T00:00:00Z' })
        .set(auth)
        .expect(400);
      expect(past.body).toEqual({
        errorCode: 'bad_request',
        message: 'validTo must not be in the past',
        statusCode: 400,
      });
      expect(await current(ws.slug)).toMatchObject({ subscriptionId: pro.subscriptionId, validTo: pending.validFrom });
    });
  });

  describe('validation', () => {
    let slug: string;
    let workspaceId: string;
    beforeAll(async () => {
      const ws = await createWorkspace(t, auth);
      slug = ws.slug;
      workspaceId = ws.id;
    });

    it('refuses a missing or unknown level, naming the allowed ones', async () => {
      for (const body of [{}, { level: 'GOLD' }, { level: 5 }, { level: '' }]) {
        expect((await t.http.put(path(slug)).set(auth).send(body).expect(400)).body).toEqual(LEVEL_ERROR);
        expect((await t.http.post(path(slug)).set(auth).send(body).expect(400)).body).toEqual(LEVEL_ERROR);
      }
    });

    it('refuses a validFrom in the past or not a date-time, and unknown fields', async () => {
      const past = await t.http
        .put(path(slug))
        .set(auth)
        .send({ level: 'PRO', validFrom: '2020-01-01T00:00:00Z' })
        .expect(400);
      expect(past.body).toEqual({
        errorCode: 'bad_request',
        message: 'validFrom must not be in the past',
        statusCode: 400,
      });
      // The last: 10000-01-01T13:59Z, which an answer could not write as an RFC 3339 date-time.
      for (const validFrom of [
        'tomorrow',
        '2030-01-01',
        '2030-01-01T00:00:00',
        1893456000000,
        '9999-12-31T23:59:00-14:00',
      ]) {
        const res = await t.http.put(path(slug)).set(auth).send({ level: 'PRO', validFrom }).expect(400);
        expect(res.body).toEqual({
          errorCode: 'bad_request',
          message:
            'validFrom must be an ISO 8601 date-time with a time zone, from 1970 to 9999 (UTC), e.g. 2025-03-01T12:00:00Z',
          statusCode: 400,
        });
      }
      const unknown = await t.http
        .put(path(slug))
        .set(auth)
        .send({ level: 'PRO', effectiveAt: inHours(1) })
        .expect(400);
      expect(unknown.body).toEqual({
        errorCode: 'bad_request',
        message: 'effectiveAt: property effectiveAt should not exist',
        statusCode: 400,
      });
      const badClose = await t.http
        .delete(`${path(slug)}/${randomUUID()}`)
        .query({ validTo: 'soon' })
        .set(auth)
        .expect(400);
      expect(badClose.body.message).toContain('validTo must be an ISO 8601 date-time');
      // Refused requests write nothing.
      expect(await rows(workspaceId)).toEqual([]);
    });
  });

  it('is shared by the members of the workspace', async () => {
    const ws = await createWorkspace(t, auth);
    const other = await createDeveloperWithToken(t.app);
    await t.dataSource.query('INSERT INTO workspace_members (workspace_id, developer_id) VALUES ($1, $2)', [
      ws.id,
      other.developer.id,
    ]);
    const pro = (await t.http.put(path(ws.slug)).set(other.auth).send({ level: 'PRO' }).expect(200))
      .body as SubscriptionBody;
    expect(await current(ws.slug)).toEqual(pro);
    expect((await rows(ws.id)).at(-1)?.changed_by).toBe(other.developer.id);
  });
});

describe('subscription changes per day', () => {
  let t: TestApp;
  let auth: Auth;
  beforeAll(async () => {
    t = await createTestApp({ SUBSCRIPTION_CHANGES_PER_DAY: '3' });
    auth = (await createDeveloperWithToken(t.app)).auth;
  });
  afterAll(() => t.close());

  const put = (slug: string, level: string) => t.http.put(`/workspaces/${slug}/subscription`).set(auth).send({ level });
  const rowCount = async (workspaceId: string) =>
    Number(
      (await t.dataSource.query('SELECT count(*) AS n FROM subscriptions WHERE workspace_id = $1', [workspaceId]))[0].n,
    );

  it('add at most the limit of rows to a workspace’s history in any 24 hours (429 with Retry-After); a change back to the current level is never refused', async () => {
    const ws = await createWorkspace(t, auth);
    // The FREE row held from the creation, then two changes: three rows started within the day.
    await put(ws.slug, 'PRO').expect(200);
    await put(ws.slug, 'FREE').expect(200);
    expect(await rowCount(ws.id)).toBe(3);

    const refused = await put(ws.slug, 'PRO');
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      errorCode: 'threshold_exceeded',
      message: expect.stringMatching(
        /^The subscription of this workspace changed 3 times in the last 24 hours; retry in \d+ seconds$/,
      ),
      statusCode: 429,
    });
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(86_000);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    // POST (a start) is held to it as well; keeping the current level adds no row and is not.
    await t.http
      .delete(`/workspaces/${ws.slug}/subscription/${(await put(ws.slug, 'FREE').expect(200)).body.subscriptionId}`)
      .set(auth)
      .expect(200);
    expect((await t.http.post(`/workspaces/${ws.slug}/subscription`).set(auth).send({ level: 'PRO' })).status).toBe(
      429,
    );
    expect(await rowCount(ws.id)).toBe(3);

    // A day later the rows have left the window: the next change goes through.
    await t.dataSource.query(
      `UPDATE subscriptions SET valid_from = valid_from - interval '25 hours', valid_to = valid_to - interval '25 hours'
        WHERE workspace_id = $1`,
      [ws.id],
    );
    await t.http.post(`/workspaces/${ws.slug}/subscription`).set(auth).send({ level: 'PRO' }).expect(201);
    expect(await rowCount(ws.id)).toBe(4);
  });
});
