import type { Response } from 'supertest';
import { waitForInstance } from '../compute/support';
import {
  Auth,
  createReadyDatabase,
  createWorkspace,
  databaseRow,
  DatabaseBody,
  roleExists,
  unique,
} from '../databases/support';
import { createDeveloperWithToken, createTestApp, eventually, TestApp } from '../support/test-app';

/**
 * Two requests on one resource at the same moment, a few rounds each: whatever the interleaving,
 * the final state is one that some serial order of the two requests produces, and each answer is
 * the one that request gets in that order. Each round reports what it saw, so a failure shows the
 * interleaving that broke the rule.
 */

const ROUNDS = Number(process.env.RACE_ROUNDS ?? 8);

jest.setTimeout(300_000);

type Answer = { status: number; body: Record<string, unknown> };
const answer = (res: Response): Answer => ({ status: res.status, body: res.body as Record<string, unknown> });
const brief = (a: Answer) => {
  const { id, name, errorCode, message, deleted } = a.body ?? {};
  return `${a.status} ${JSON.stringify({ id, name, deleted, errorCode, message })}`;
};

/** Runs both requests at once (each on its own connection). */
function together(first: () => PromiseLike<Response>, second: () => PromiseLike<Response>): Promise<[Answer, Answer]> {
  return Promise.all([first(), second()]).then(([a, b]) => [answer(a), answer(b)]);
}

async function readyDatabases(t: TestApp, auth: Auth, slug: string, count: number): Promise<DatabaseBody[]> {
  const made: DatabaseBody[] = [];
  // A few at a time: one provisioning job runs at a time anyway.
  for (let i = 0; i < count; i += 4) {
    const batch = Array.from({ length: Math.min(4, count - i) }, () => `race_${unique()}`);
    made.push(...(await Promise.all(batch.map((name) => createReadyDatabase(t, auth, slug, name)))));
  }
  return made;
}

describe('races on one database (rename, delete, credentials, rotation, compute)', () => {
  let t: TestApp;
  let auth: Auth;
  let slug: string;
  let ready: DatabaseBody[];
  /** A new database (rename and delete act on the metadata only, so it need not be built yet). */
  const fresh = async (): Promise<DatabaseBody> => {
    const res = await t.http
      .post(`/workspaces/${slug}/databases`)
      .set(auth)
      .send({ databaseName: `race_${unique()}`, region: 'AWS_US_WEST_2' })
      .expect(201);
    return res.body as DatabaseBody;
  };

  beforeAll(async () => {
    t = await createTestApp({
      DATABASE_POOL_TARGET: '0',
      DATABASE_DELETION_GRACE_SECONDS: '3600',
      // Each round creates and resizes on one database: a longer hunt (RACE_ROUNDS) would reach the
      // day's compute changes, which are not what it looks for.
      COMPUTE_CHANGES_PER_DATABASE_PER_DAY: '100000',
    });
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
    ready = await readyDatabases(t, auth, slug, Math.max(2, Math.ceil(ROUNDS / 2)) + 1);
  }, 240_000);
  afterAll(() => t.close());

  const base = (name: string) => `/workspaces/${slug}/databases/${name}`;

  it('a rename racing a delete ends as one of the two serial orders, and both answers agree with it', async () => {
    const failures: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const db = await fresh();
      const renamed = `${db.name}_new`;
      const [rename, del] = await together(
        () => t.http.put(base(db.name)).set(auth).send({ name: renamed }),
        () => t.http.delete(base(db.name)).set(auth),
      );
      const row = await databaseRow(t, db.id);
      // Rename first: the delete finds nothing by the old name.
      const renameFirst =
        rename.status === 200 &&
        rename.body.name === renamed &&
        del.status === 404 &&
        row.name === renamed &&
        !row.deleted;
      // Delete first: the rename finds the database queued for deletion.
      const deleteFirst =
        del.status === 200 &&
        del.body.name === db.name &&
        rename.status === 409 &&
        rename.body.errorCode === 'db_status_failure' &&
        row.name === db.name &&
        !!row.deleted;
      if (!renameFirst && !deleteFirst)
        failures.push(
          `round ${round}: rename ${brief(rename)}; delete ${brief(del)}; row name ${row.name}, deleted ${String(row.deleted)}`,
        );
    }
    expect(failures).toEqual([]);
  });

  it('two renames of one database: one wins, the other finds no database by the old name', async () => {
    const failures: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const db = await fresh();
      const [a, b] = await together(
        () =>
          t.http
            .put(base(db.name))
            .set(auth)
            .send({ name: `${db.name}_a` }),
        () =>
          t.http
            .put(base(db.name))
            .set(auth)
            .send({ name: `${db.name}_b` }),
      );
      const row = await databaseRow(t, db.id);
      const aWon = a.status === 200 && b.status === 404 && row.name === `${db.name}_a`;
      const bWon = b.status === 200 && a.status === 404 && row.name === `${db.name}_b`;
      if (!aWon && !bWon) failures.push(`round ${round}: ${brief(a)}; ${brief(b)}; row name ${row.name}`);
    }
    expect(failures).toEqual([]);
  });

  it('two databases renamed to the same new name: exactly one gets it, the other answers 409', async () => {
    const failures: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const [x, y] = [await fresh(), await fresh()];
      const target = `race_same_${unique()}`;
      const [a, b] = await together(
        () => t.http.put(base(x.name)).set(auth).send({ name: target }),
        () => t.http.put(base(y.name)).set(auth).send({ name: target }),
      );
      const [rx, ry] = [await databaseRow(t, x.id), await databaseRow(t, y.id)];
      const xWon = a.status === 200 && b.status === 409 && rx.name === target && ry.name === y.name;
      const yWon = b.status === 200 && a.status === 409 && ry.name === target && rx.name === x.name;
      if (!xWon && !yWon) failures.push(`round ${round}: ${brief(a)}; ${brief(b)}; names ${rx.name}, ${ry.name}`);
    }
    expect(failures).toEqual([]);
  });

  it('two rotations of one database: the later one issues the only credential left unexpired', async () => {
    const failures: string[] = [];
    const rounds = Math.max(2, Math.ceil(ROUNDS / 2));
    for (let round = 0; round < rounds; round++) {
      const db = ready[round + 1];
      const original = await t.http
        .post(`${base(db.name)}/credentials`)
        .set(auth)
        .expect(200);
      const rotate = () =>
        t.http
          .post(`${base(db.name)}/credentials/rotate`)
          .set(auth)
          .send({ delayOldSecretsExpirationHours: 24 });
      const [a, b] = await together(rotate, rotate);
      const rows = await t.dataSource.query<{ id: string; expires_at: Date | null }[]>(
        'SELECT id, expires_at FROM credentials WHERE database_id = $1 AND dropped IS NULL',
        [db.id],
      );
      const live = rows.filter((r) => !r.expires_at).map((r) => r.id);
      const issued = [a.body.id, b.body.id];
      const ok =
        a.status === 200 &&
        b.status === 200 &&
        rows.length === 3 &&
        live.length === 1 &&
        issued.includes(live[0]) &&
        rows.some((r) => r.id === (original.body as { id: string }).id && r.expires_at);
      if (!ok)
        failures.push(
          `round ${round}: ${brief(a)}; ${brief(b)}; credentials ${JSON.stringify(rows)}; unexpired ${live.join(', ')}`,
        );
    }
    expect(failures).toEqual([]);
  });

  it('a compute resize racing its delete: deleted in the end, and the recorded size agrees with the resize answer', async () => {
    const failures: string[] = [];
    const rounds = Math.max(2, Math.ceil(ROUNDS / 4));
    const db = ready[0];
    for (let round = 0; round < rounds; round++) {
      const created = await t.http
        .post(`${base(db.name)}/compute`)
        .set(auth)
        .send({ instanceSize: 'dc-small', instanceName: `race ${round}` })
        .expect(202);
      const id = (created.body as { instanceId: string }).instanceId;
      await waitForInstance(t, auth, slug, db.name, id, 'READY');
      const [resize, del] = await together(
        () =>
          t.http
            .put(`${base(db.name)}/compute/${id}`)
            .set(auth)
            .send({ instanceSize: 'dc-medium' }),
        () => t.http.delete(`${base(db.name)}/compute/${id}`).set(auth),
      );
      const [row] = await t.dataSource.query<{ desired_instance_type_id: string; deleted: Date | null }[]>(
        'SELECT desired_instance_type_id, deleted FROM compute_instances WHERE id = $1',
        [id],
      );
      // Resize first: both accepted, the medium size recorded. Delete first: the resize is refused.
      const resizeFirst = resize.status === 202 && del.status === 202 && row.desired_instance_type_id === 'dc-medium';
      const deleteFirst =
        [200, 202].includes(del.status) &&
        resize.status === 409 &&
        resize.body.errorCode === 'db_status_failure' &&
        row.desired_instance_type_id === 'dc-small';
      if (!row.deleted || (!resizeFirst && !deleteFirst))
        failures.push(`round ${round}: resize ${brief(resize)}; delete ${brief(del)}; row ${JSON.stringify(row)}`);
      await waitForInstance(t, auth, slug, db.name, id, 'TERMINATED');
    }
    expect(failures).toEqual([]);
  });
});

describe('a credential created while its database is deleted and finalized at once', () => {
  let t: TestApp;
  let auth: Auth;
  let slug: string;

  beforeAll(async () => {
    t = await createTestApp({ DATABASE_POOL_TARGET: '0', DATABASE_DELETION_GRACE_SECONDS: '0' });
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
  });
  afterAll(() => t.close());

  it('either the credential is refused, or it is made and then dropped with the database: no role is left behind', async () => {
    const failures: string[] = [];
    const dbs = await readyDatabases(t, auth, slug, Math.max(2, Math.ceil(ROUNDS / 2)));
    for (const [round, db] of dbs.entries()) {
      const base = `/workspaces/${slug}/databases/${db.name}`;
      const [credential, del] = await together(
        () => t.http.post(`${base}/credentials`).set(auth),
        () => t.http.delete(base).set(auth),
      );
      await eventually(async () => (await databaseRow(t, db.id)).finalized, 30000);
      const rows = await t.dataSource.query<{ id: string; dropped: Date | null }[]>(
        'SELECT id, dropped FROM credentials WHERE database_id = $1',
        [db.id],
      );
      const made = credential.status === 200 ? (credential.body.id as string) : undefined;
      const problems: string[] = [];
      if (del.status !== 200) problems.push('the delete was not accepted');
      if (credential.status !== 200 && ![404, 409].includes(credential.status))
        problems.push('the create was neither made nor refused');
      if (made && !rows.some((r) => r.id === made)) problems.push('the credential answered has no row');
      if (!made && rows.length) problems.push('a refused credential left a row');
      if (rows.some((r) => !r.dropped)) problems.push('a credential of the finalized database is not marked dropped');
      for (const r of rows) if (await roleExists(r.id)) problems.push(`role ${r.id} is left on the data plane`);
      if (problems.length)
        failures.push(
          `round ${round}: ${problems.join(', ')}; create ${brief(credential)}; delete ${brief(del)}; rows ${JSON.stringify(rows)}`,
        );
    }
    expect(failures).toEqual([]);
  });

  it('a credential deleted meanwhile is either deleted (204) or refused as its database is gone (404), never a 5xx; its role goes and its row is marked dropped', async () => {
    const failures: string[] = [];
    const dbs = await readyDatabases(t, auth, slug, Math.max(2, Math.ceil(ROUNDS / 2)));
    for (const [round, db] of dbs.entries()) {
      const base = `/workspaces/${slug}/databases/${db.name}`;
      const { id } = (await t.http.post(`${base}/credentials`).set(auth).expect(200)).body as { id: string };
      const [removal, del] = await together(
        () => t.http.delete(`${base}/credentials/${id}`).set(auth),
        () => t.http.delete(base).set(auth),
      );
      await eventually(async () => (await databaseRow(t, db.id)).finalized, 30000);
      const [row] = await t.dataSource.query<{ dropped: Date | null }[]>(
        'SELECT dropped FROM credentials WHERE id = $1',
        [id],
      );
      const problems: string[] = [];
      if (del.status !== 200) problems.push('the database delete was not accepted');
      if (![204, 404].includes(removal.status)) problems.push('the credential delete was neither done nor refused');
      if (removal.status === 404 && removal.body.message !== 'The database no longer exists')
        problems.push('the 404 does not say the database is gone');
      if (!row?.dropped) problems.push('the credential is not marked dropped');
      if (await roleExists(id)) problems.push('its role is left on the data plane');
      if (problems.length)
        failures.push(
          `round ${round}: ${problems.join(', ')}; credential delete ${brief(removal)}; delete ${brief(del)}`,
        );
    }
    expect(failures).toEqual([]);
  });
});
