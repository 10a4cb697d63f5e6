import { DataPlane, DataPlaneError } from '../../src/data-plane/data-plane.service';
import { untilAsleep, withFailingRows, withSlowRows } from '../support/slow-rows';
import { createDeveloperWithToken, reconcile, TestApp } from '../support/test-app';
import {
  Auth,
  connectAs,
  createAppWithUnbuildableEuRegion,
  createReadyDatabase,
  createWorkspace,
  DatabaseBody,
  queryAs,
  roleExists,
  serverIdOf,
} from '../databases/support';

interface Issued {
  id: string;
  password: string;
}

interface Listed {
  id: string;
  expires?: string;
}

/**
 * A credential's DELETE records its wish before it touches the data plane (the row expires at the
 * moment of the delete, committed), then drops the role, then marks the row dropped: whatever fails
 * or crashes after the first step, the overdue sweep finishes the job.
 */
describe('deleting a credential', () => {
  let t: TestApp;
  let auth: Auth;
  let slug: string;
  let db: DatabaseBody;
  beforeAll(async () => {
    t = await createAppWithUnbuildableEuRegion();
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
    db = await createReadyDatabase(t, auth, slug);
  });
  afterAll(() => t.close());

  const path = () => `/workspaces/${slug}/databases/${db.name}/credentials`;
  const issue = async (): Promise<Issued> => (await t.http.post(path()).set(auth).expect(200)).body as Issued;
  const listed = async (): Promise<Listed[]> => (await t.http.get(path()).set(auth).expect(200)).body as Listed[];
  const row = async (id: string) =>
    (
      await t.dataSource.query<{ expires_at: Date | null; dropped: Date | null }[]>(
        'SELECT expires_at, dropped FROM credentials WHERE id = $1',
        [id],
      )
    )[0];

  it('has recorded its wish (committed: the row expires now) by the time the role is dropped', async () => {
    const cred = await issue();
    const dataPlane = t.app.get(DataPlane);
    const drop = dataPlane.dropLoginRole.bind(dataPlane);
    let seenByTheDrop: { expires_at: Date | null; dropped: Date | null } | undefined;
    const spy = jest.spyOn(dataPlane, 'dropLoginRole').mockImplementation(async (server, physical, role) => {
      // Read on a connection of its own: only what is committed is seen, as after a crash.
      if (role === cred.id) seenByTheDrop = await row(cred.id);
      return drop(server, physical, role);
    });
    const before = Date.now();
    try {
      await t.http.delete(`${path()}/${cred.id}`).set(auth).expect(204);
    } finally {
      spy.mockRestore();
    }
    expect(seenByTheDrop?.dropped).toBeNull();
    expect(seenByTheDrop?.expires_at).not.toBeNull();
    expect(new Date(seenByTheDrop!.expires_at!).getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(new Date(seenByTheDrop!.expires_at!).getTime()).toBeLessThanOrEqual(Date.now());
    expect((await row(cred.id)).dropped).not.toBeNull();
    expect(await roleExists(cred.id)).toBe(false);
  });

  it('answers 204 when the bookkeeping after the drop fails (the role is gone); it stays listed as expired until the sweep marks it dropped', async () => {
    const cred = await issue();
    const res = await withFailingRows(
      t.dataSource,
      { table: 'credentials', on: 'UPDATE', when: `NEW.id = '${cred.id}' AND NEW.dropped IS NOT NULL` },
      () => t.http.delete(`${path()}/${cred.id}`).set(auth),
    );
    expect(res.status).toBe(204);
    expect(await roleExists(cred.id)).toBe(false);
    await expect(queryAs(db.dbHost!, cred.id, cred.password, 'SELECT 1')).rejects.toThrow();
    const waiting = await row(cred.id);
    expect(waiting.dropped).toBeNull();
    expect(new Date(waiting.expires_at!).getTime()).toBeLessThanOrEqual(Date.now());
    // Until the sweep records it, the list says it exists with its expiry passed.
    expect((await listed()).find((c) => c.id === cred.id)?.expires).toBe(new Date(waiting.expires_at!).toISOString());

    await reconcile(t.app);
    expect((await row(cred.id)).dropped).not.toBeNull();
    expect((await listed()).map((c) => c.id)).not.toContain(cred.id);
  });

  it('answers 503 with Retry-After when the server does not answer, 502 when it refuses; the credential stays listed as expired, a retry or the sweep finishes it', async () => {
    const dataPlane = t.app.get(DataPlane);
    const serverId = await serverIdOf(t);
    const unanswered = await issue();
    const refused = await issue();
    const spy = jest.spyOn(dataPlane, 'dropLoginRole').mockImplementation((_server, _physical, role) => {
      const unavailable = role === unanswered.id;
      const cause = Object.assign(new Error(unavailable ? 'timeout expired' : 'simulated refusal'), {
        code: unavailable ? '57014' : 'XX000',
      });
      return Promise.reject(new DataPlaneError('AWS_US_WEST_2', serverId, unavailable, cause));
    });
    let outage, refusal;
    try {
      outage = await t.http.delete(`${path()}/${unanswered.id}`).set(auth);
      refusal = await t.http.delete(`${path()}/${refused.id}`).set(auth);
    } finally {
      spy.mockRestore();
    }
    expect(outage.status).toBe(503);
    expect(outage.headers['retry-after']).toBe('5');
    expect(outage.body).toMatchObject({ errorCode: 'credential_propagation_failure', statusCode: 503 });
    // It says what was done: the expiry is recorded, the role goes once the server answers.
    expect(outage.body.message).toMatch(/AWS_US_WEST_2 is not answering; its expiry is recorded/);
    expect(outage.body.message).not.toMatch(/nothing was changed/);
    expect(refusal.status).toBe(502);
    expect(refusal.body).toMatchObject({ errorCode: 'credential_propagation_failure', statusCode: 502 });
    for (const id of [unanswered.id, refused.id]) {
      expect(await roleExists(id)).toBe(true);
      const waiting = await row(id);
      expect(waiting.dropped).toBeNull();
      expect((await listed()).find((c) => c.id === id)?.expires).toBe(new Date(waiting.expires_at!).toISOString());
    }

    // A retry of the DELETE finishes one; the sweep finishes the other.
    await t.http.delete(`${path()}/${unanswered.id}`).set(auth).expect(204);
    await reconcile(t.app);
    for (const id of [unanswered.id, refused.id]) {
      expect(await roleExists(id)).toBe(false);
      expect((await row(id)).dropped).not.toBeNull();
    }
    expect((await listed()).map((c) => c.id)).not.toEqual(expect.arrayContaining([unanswered.id]));
    expect((await listed()).map((c) => c.id)).not.toEqual(expect.arrayContaining([refused.id]));
  });

  it('waits out a lock a sibling session holds on what the credential owns (503, the server still answering), and the sweep drops other credentials of the server meanwhile', async () => {
    const dataPlane = t.app.get(DataPlane);
    const serverId = await serverIdOf(t);
    const owning = await issue();
    const sibling = await issue();
    // A table the credential's own role owns (not the owner role: it set its role back first),
    // readable by its siblings, one of which holds a lock on it in an open transaction.
    await queryAs(
      db.dbHost!,
      owning.id,
      owning.password,
      `SET ROLE NONE; CREATE TABLE held (x int); GRANT SELECT ON held TO PUBLIC`,
    );
    const holder = await connectAs(db.dbHost!, sibling.id, sibling.password);
    const otherDb = await createReadyDatabase(t, auth, slug);
    const other = (await t.http.post(`/workspaces/${slug}/databases/${otherDb.name}/credentials`).set(auth).expect(200))
      .body as Issued;
    try {
      await holder.query('BEGIN; SELECT * FROM held');
      const res = await t.http.delete(`${path()}/${owning.id}`).set(auth);
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.body).toMatchObject({ errorCode: 'credential_propagation_failure', statusCode: 503 });
      expect(res.body.message).not.toMatch(/not answering|nothing was changed/);
      // The server answered (it refused the wait): placement and the sweeps keep it.
      expect(dataPlane.answering(serverId)).toBe(true);
      await expect(queryAs(db.dbHost!, owning.id, owning.password, 'SELECT 1')).rejects.toThrow();

      // Another credential of the server is overdue: the sweep, failing on the first, drops it.
      await t.dataSource.query('UPDATE credentials SET expires_at = now() WHERE id = $1', [other.id]);
      await reconcile(t.app);
      expect(await roleExists(other.id)).toBe(false);
      expect((await row(other.id)).dropped).not.toBeNull();
      expect(await roleExists(owning.id)).toBe(true);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
    }
    await reconcile(t.app);
    expect(await roleExists(owning.id)).toBe(false);
    expect((await row(owning.id)).dropped).not.toBeNull();
  }, 60000);

  it('keeps an earlier expiry a rotation set when it records its wish', async () => {
    const old = await issue();
    const earlier = new Date(Date.now() - 60 * 1000);
    await t.dataSource.query('UPDATE credentials SET expires_at = $2 WHERE id = $1', [old.id, earlier]);
    await t.http.delete(`${path()}/${old.id}`).set(auth).expect(204);
    const done = await row(old.id);
    expect(new Date(done.expires_at!).getTime()).toBe(earlier.getTime());
    expect(done.dropped).not.toBeNull();
  });

  it('is never pushed back by a rotation that read the credential before the delete recorded its wish', async () => {
    const deleted = await issue();
    const dataPlane = t.app.get(DataPlane);
    const serverId = await serverIdOf(t);
    // The delete's drop fails (the server does not answer): the recorded expiry is what the sweep,
    // and the role's VALID UNTIL, go by.
    const spy = jest.spyOn(dataPlane, 'dropLoginRole').mockImplementation((_server, _physical, role) => {
      if (role !== deleted.id) return Promise.reject(new Error(`unexpected drop of ${role}`));
      const cause = Object.assign(new Error('timeout expired'), { code: '57014' });
      return Promise.reject(new DataPlaneError('AWS_US_WEST_2', serverId, true, cause));
    });
    let rotation, deletion;
    try {
      // The rotation has read the database's credentials (the deleted one still working) and sleeps
      // writing its record; the delete commits its wish meanwhile.
      [rotation, deletion] = await withSlowRows(
        t.dataSource,
        { table: 'credential_rotations', on: 'INSERT', when: `NEW.database_id = '${db.id}'`, seconds: 1 },
        async () => {
          const rotating = t.http
            .post(`${path()}/rotate`)
            .set(auth)
            .send({ delayOldSecretsExpirationHours: 24 })
            .then();
          await untilAsleep(t.dataSource, 'INSERT INTO "credential_rotations"');
          const deleting = await t.http.delete(`${path()}/${deleted.id}`).set(auth);
          return [await rotating, deleting];
        },
      );
    } finally {
      spy.mockRestore();
    }
    expect(rotation.status).toBe(200);
    expect(deletion.status).toBe(503);
    const [after] = await t.dataSource.query<{ expires_at: Date; expired_by_rotation_id: string | null }[]>(
      'SELECT expires_at, expired_by_rotation_id FROM credentials WHERE id = $1',
      [deleted.id],
    );
    // Still the moment of the delete, not the rotation's 24 hours later.
    expect(new Date(after.expires_at).getTime()).toBeLessThanOrEqual(Date.now());
    expect(after.expired_by_rotation_id).toBeNull();
    await reconcile(t.app);
    expect(await roleExists(deleted.id)).toBe(false);
    expect((await row(deleted.id)).dropped).not.toBeNull();
  });

  it('answers 204 while the VALID UNTIL of the same role is being set again and again (the two take turns on the server)', async () => {
    const dataPlane = t.app.get(DataPlane);
    const serverId = await serverIdOf(t);
    const statuses: number[] = [];
    const problems: string[] = [];
    for (let round = 0; round < 10; round += 1) {
      const cred = await issue();
      let stop = false;
      // What a rotation's bookkeeping and the sweep do to a waiting credential, as fast as possible.
      const reassert = async () => {
        while (!stop) {
          await dataPlane
            .expireLoginRole(serverId, cred.id, new Date(Date.now() + 3600 * 1000))
            .catch((err: Error) => problems.push(err.message));
        }
      };
      const reasserting = [reassert(), reassert()];
      await new Promise((resolve) => setTimeout(resolve, 30));
      const res = await t.http.delete(`${path()}/${cred.id}`).set(auth);
      stop = true;
      await Promise.all(reasserting);
      statuses.push(res.status);
      if (res.status !== 204) problems.push(`round ${round}: ${res.status} ${JSON.stringify(res.body)}`);
      if (await roleExists(cred.id)) problems.push(`round ${round}: the role is still there`);
    }
    expect(problems).toEqual([]);
    expect(statuses.every((s) => s === 204)).toBe(true);
  }, 120000);
});
