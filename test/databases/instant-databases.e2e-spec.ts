import { createHash, randomInt } from 'node:crypto';
import { getQueueToken } from '@nestjs/bull';
import type { Job, Queue } from 'bull';
import { Client } from 'pg';
import type request from 'supertest';
import { InstantDatabasesService } from '../../src/instant-databases/instant-databases.service';
import { Queues } from '../../src/queues/queue-names';
import { WorkspacesService } from '../../src/workspaces/workspaces.service';
import { withFailingRows, withGatedRows, withSlowRows } from '../support/slow-rows';
import {
  createDeveloperWithToken,
  createIsolatedTestApp,
  createTestApp,
  eventually,
  TestApp,
} from '../support/test-app';
import {
  createReadyDatabase,
  createWorkspace,
  databaseRow,
  physicalDatabaseExists,
  queryAs,
  serverIdOf,
  unique,
} from './support';

interface Provisioned {
  database: { id: string; name: string; status: string; region: string; dbHost: string; created: string };
  user: string;
  password: string;
  connectionString: string;
  claimCode: string;
  claimExpiresAt: string;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

async function queryWith<R extends object>(connectionString: string, sql: string): Promise<R[]> {
  const url = new URL(connectionString);
  const dbHost = `postgres://${url.host}${url.pathname}`;
  return queryAs<R>(dbHost, decodeURIComponent(url.username), decodeURIComponent(url.password), sql);
}

/**
 * A client of its own (X-Forwarded-For is trusted from loopback), so a test finds its claims: an
 * address in an IPv6 /64 of its own, and that /64 as the service records it (a client counts by its /64).
 */
const ownClient = () => {
  const subnet = `2001:db8:${randomInt(0x1000, 0x10000).toString(16)}:${randomInt(0x1000, 0x10000).toString(16)}::`;
  return { address: `${subnet}1`, recorded: `${subnet}/64`, subnet };
};
describe('instant databases without an account', () => {
  let t: TestApp;
  let auth: { Authorization: string };
  beforeAll(async () => {
    t = await createTestApp({
      PLAN_FREE_MAX_DATABASES: '2',
      DATABASE_POOL_TARGET: '1',
      INSTANT_DATABASES_PER_ADDRESS_PER_HOUR: '100',
    });
    auth = (await createDeveloperWithToken(t.app)).auth;
  });
  afterAll(() => t.close());

  const provision = async (): Promise<Provisioned> => {
    const res = await t.http.post('/databases/provision').send({});
    expect({ status: res.status, body: res.body as unknown }).toEqual({ status: 201, body: expect.any(Object) });
    return res.body as Provisioned;
  };

  it('provisions a READY database with a working connection string, claims it into a workspace with its data and credential', async () => {
    const res = await t.http.post('/databases/provision').send({ region: 'AWS_US_WEST_2' });
    expect(res.status).toBe(201);
    const p = res.body as Provisioned;
    expect(p).toEqual({
      database: {
        id: expect.any(String),
        name: expect.stringMatching(/^instant_[0-9a-f]{12}$/),
        status: 'READY',
        region: 'AWS_US_WEST_2',
        dbHost: expect.stringMatching(/^postgres:\/\/[^@/]+\/[a-z0-9_]+$/),
        created: expect.any(String),
      },
      user: expect.any(String),
      password: expect.any(String),
      connectionString: expect.stringMatching(/^postgres:\/\/[^:]+:[^@]+@/),
      claimCode: expect.any(String),
      claimExpiresAt: expect.any(String),
    });
    const ttl = new Date(p.claimExpiresAt).getTime() - Date.now();
    expect(ttl).toBeGreaterThan(23.9 * 3600 * 1000);
    expect(ttl).toBeLessThanOrEqual(24 * 3600 * 1000);

    await queryWith(p.connectionString, 'CREATE TABLE notes (body text); INSERT INTO notes VALUES ($$kept$$)');

    // The code is stored only as its hash; the database belongs to no workspace anyone is in.
    const [claim] = await t.dataSource.query('SELECT * FROM database_claims WHERE database_id = $1', [p.database.id]);
    expect(claim.code_hash).toBe(sha256(p.claimCode));
    expect(JSON.stringify(claim)).not.toContain(p.claimCode);
    const ws = await createWorkspace(t, auth);
    await t.http.get(`/databases/${p.database.id}`).set(auth).expect(404);

    const claimed = await t.http
      .post(`/workspaces/${ws.slug}/databases/claim`)
      .set(auth)
      .send({ claimCode: p.claimCode });
    expect(claimed.status).toBe(200);
    expect(claimed.body).toMatchObject({
      id: p.database.id,
      name: p.database.name,
      status: 'READY',
      workspace: { id: ws.id, slug: ws.slug },
      dbHost: p.database.dbHost,
    });
    const listed = await t.http.get(`/workspaces/${ws.slug}/databases`).set(auth).expect(200);
    expect(listed.body.map((d: { id: string }) => d.id)).toEqual([p.database.id]);
    const credentials = await t.http
      .get(`/workspaces/${ws.slug}/databases/${p.database.name}/credentials`)
      .set(auth)
      .expect(200);
    expect(credentials.body.map((c: { id: string }) => c.id)).toEqual([p.user]);
    expect(await queryWith<{ body: string }>(p.connectionString, 'SELECT body FROM notes')).toEqual([{ body: 'kept' }]);

    const again = await t.http
      .post(`/workspaces/${ws.slug}/databases/claim`)
      .set(auth)
      .send({ claimCode: p.claimCode });
    expect(again.status).toBe(404);
    expect(again.body).toEqual({
      errorCode: 'entity_not_found',
      message: 'Claim code is invalid or expired',
      statusCode: 404,
    });
  });

  it('answers an unknown code with 404 and a bad body with 400', async () => {
    const ws = await createWorkspace(t, auth);
    const unknown = await t.http.post(`/workspaces/${ws.slug}/databases/claim`).set(auth).send({ claimCode: 'nope' });
    expect(unknown.status).toBe(404);
    for (const body of [{}, { claimCode: '' }, { claimCode: 7 }]) {
      const res = await t.http.post(`/workspaces/${ws.slug}/databases/claim`).set(auth).send(body);
      expect(res.status).toBe(400);
      expect(res.body.errorCode).toBe('bad_request');
    }
    const region = await t.http.post('/databases/provision').send({ region: 'MARS_1' });
    expect(region.status).toBe(400);
  });

  it('refuses a claim into a workspace whose plan is full, or that has a database of that name, with 400 saying which', async () => {
    const full = await createWorkspace(t, auth);
    for (let i = 0; i < 2; i++) {
      await t.http
        .post(`/workspaces/${full.slug}/databases`)
        .set(auth)
        .send({ databaseName: `f_${unique()}`, region: 'AWS_US_WEST_2' })
        .expect(201);
    }
    const p = await provision();
    const refused = await t.http
      .post(`/workspaces/${full.slug}/databases/claim`)
      .set(auth)
      .send({ claimCode: p.claimCode });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      errorCode: 'bad_request',
      message: 'The FREE plan allows 2 databases; the workspace has no room for this database',
      statusCode: 400,
    });

    const same = await createWorkspace(t, auth);
    await t.http
      .post(`/workspaces/${same.slug}/databases`)
      .set(auth)
      .send({ databaseName: p.database.name, region: 'AWS_US_WEST_2' })
      .expect(201);
    const clash = await t.http
      .post(`/workspaces/${same.slug}/databases/claim`)
      .set(auth)
      .send({ claimCode: p.claimCode });
    expect(clash.status).toBe(400);
    expect(clash.body.message).toBe(`The workspace already has a database named ${p.database.name}`);
    expect((await databaseRow(t, p.database.id)).deleted).toBeNull();
  });

  it('refuses a claim with 400 when a rename takes the name in the workspace while the claim moves the database', async () => {
    const p = await provision();
    const ws = await createWorkspace(t, auth);
    const other = `other_${unique()}`;
    await t.http
      .post(`/workspaces/${ws.slug}/databases`)
      .set(auth)
      .send({ databaseName: other, region: 'AWS_US_WEST_2' })
      .expect(201);
    // The claim has found the name free; its move waits at a gate while the rename commits the name.
    const claim = await withGatedRows(
      t.dataSource,
      {
        table: 'databases',
        on: 'UPDATE',
        when: `NEW.id = '${p.database.id}'::uuid AND NEW.workspace_id IS DISTINCT FROM OLD.workspace_id`,
      },
      async (gate) => {
        const claimed = t.http
          .post(`/workspaces/${ws.slug}/databases/claim`)
          .set(auth)
          .send({ claimCode: p.claimCode })
          .then((res) => res);
        await gate.untilGated();
        await t.http
          .put(`/workspaces/${ws.slug}/databases/${other}`)
          .set(auth)
          .send({ name: p.database.name })
          .expect(200);
        await gate.open();
        return claimed;
      },
    );
    expect({ status: claim.status, body: claim.body as unknown }).toEqual({
      status: 400,
      body: {
        errorCode: 'bad_request',
        message: `The workspace already has a database named ${p.database.name}`,
        statusCode: 400,
      },
    });
    // Nothing moved: the database is still unclaimed, its code still good.
    expect((await databaseRow(t, p.database.id)).workspace_id).not.toBe(ws.id);
    const [claimRow] = await t.dataSource.query<{ claimed_at: Date | null }[]>(
      'SELECT claimed_at FROM database_claims WHERE database_id = $1',
      [p.database.id],
    );
    expect(claimRow.claimed_at).toBeNull();
  });

  it('gives a code claimed by two accounts at once to one of them; the other gets 404', async () => {
    const p = await provision();
    const [{ id: claimId }] = await t.dataSource.query<{ id: string }[]>(
      'SELECT id FROM database_claims WHERE database_id = $1',
      [p.database.id],
    );
    const accounts = await Promise.all(
      [0, 1].map(async () => {
        const dev = await createDeveloperWithToken(t.app);
        return { developerId: dev.developer.id, auth: dev.auth, ws: await createWorkspace(t, dev.auth) };
      }),
    );
    // Marking the claim used waits 0.3 s: the other claim reads the code meanwhile.
    const answers = await withSlowRows(
      t.dataSource,
      {
        table: 'database_claims',
        on: 'UPDATE',
        when: `NEW.id = '${claimId}'::uuid AND NEW.claimed_at IS NOT NULL`,
        seconds: 0.3,
      },
      () =>
        Promise.all(
          accounts.map((a) =>
            t.http.post(`/workspaces/${a.ws.slug}/databases/claim`).set(a.auth).send({ claimCode: p.claimCode }),
          ),
        ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 404]);
    const winner = accounts[answers.findIndex((a) => a.status === 200)];
    expect(answers.find((a) => a.status === 200)!.body).toMatchObject({
      id: p.database.id,
      workspace: { id: winner.ws.id, slug: winner.ws.slug },
    });
    expect(answers.find((a) => a.status === 404)!.body).toEqual({
      errorCode: 'entity_not_found',
      message: 'Claim code is invalid or expired',
      statusCode: 404,
    });
    expect((await databaseRow(t, p.database.id)).workspace_id).toBe(winner.ws.id);
    const [claim] = await t.dataSource.query('SELECT claimed_by FROM database_claims WHERE id = $1', [claimId]);
    expect(claim).toEqual({ claimed_by: winner.developerId });
  });

  it('refuses with 404 a claim whose database its code expiring dropped half-way through, leaving that database dropped', async () => {
    const p = await provision();
    const ws = await createWorkspace(t, auth);
    await t.dataSource.query(
      "UPDATE database_claims SET expires_at = now() + interval '5 seconds' WHERE database_id = $1",
      [p.database.id],
    );
    // The workspace's plan lock, held here: the claim waits for it after reading the database live.
    const planLock = new Client({ connectionString: process.env.DATABASE_URL });
    await planLock.connect();
    try {
      await planLock.query('BEGIN');
      await planLock.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`databases:${ws.id}`]);
      const claim = t.http
        .post(`/workspaces/${ws.slug}/databases/claim`)
        .set(auth)
        .send({ claimCode: p.claimCode })
        .then((answer) => answer); // sent now
      await eventually(
        async () => {
          const [{ waiting }] = await t.dataSource.query<{ waiting: number }[]>(
            `SELECT count(*)::int AS waiting FROM pg_stat_activity
              WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND query LIKE '%pg_advisory_xact_lock%'
                AND pid <> $1`,
            [(planLock as unknown as { processID: number }).processID],
          );
          return waiting === 1;
        },
        5000,
        20,
      );
      // Meanwhile the code expires and the reconciler's pass drops the database.
      expect(
        await t.app.get(InstantDatabasesService).dropExpired(new Date(Date.now() + 10_000)),
      ).toBeGreaterThanOrEqual(1);
      await planLock.query('COMMIT');
      const res = await claim;
      expect({ status: res.status, body: res.body as unknown }).toEqual({
        status: 404,
        body: {
          errorCode: 'entity_not_found',
          message: 'The database of this claim code no longer exists',
          statusCode: 404,
        },
      });
    } finally {
      await planLock.end();
    }
    const row = await databaseRow(t, p.database.id);
    expect({ workspace: row.workspace_id === ws.id, deleted: row.deleted !== null }).toEqual({
      workspace: false,
      deleted: true,
    });
    const [claimRow] = await t.dataSource.query('SELECT claimed_at FROM database_claims WHERE database_id = $1', [
      p.database.id,
    ]);
    expect(claimRow).toEqual({ claimed_at: null });
  });

  it('refuses an expired code with 404 and drops the unclaimed database when its code expires', async () => {
    const p = await provision();
    await t.dataSource.query(
      "UPDATE database_claims SET expires_at = now() - interval '1 second' WHERE database_id = $1",
      [p.database.id],
    );
    const ws = await createWorkspace(t, auth);
    const expired = await t.http
      .post(`/workspaces/${ws.slug}/databases/claim`)
      .set(auth)
      .send({ claimCode: p.claimCode });
    expect(expired.status).toBe(404);

    const physical = (await databaseRow(t, p.database.id)).physical_name;
    expect(await physicalDatabaseExists(physical)).toBe(true);
    expect(await t.app.get(InstantDatabasesService).dropExpired()).toBeGreaterThanOrEqual(1);
    await eventually(async () => ((await databaseRow(t, p.database.id)).finalized ? true : null));
    expect(await physicalDatabaseExists(physical)).toBe(false);
    await expect(queryWith(p.connectionString, 'SELECT 1')).rejects.toThrow();
  });

  it('drops a newly expired unclaimed database however many expired codes whose databases are long gone came before it', async () => {
    // A thousand codes that expired unclaimed two days ago, their databases dropped since (tombstones),
    // as passes of the reconciler leave them: more than one pass takes.
    const holder = await t.app.get(WorkspacesService).holdingWorkspace();
    const seed = `gone_${unique()}`;
    try {
      await t.dataSource.query(
        `WITH gone AS (
           INSERT INTO databases (workspace_id, name, region, server_id, status, physical_name,
                                  deleted, deletion_due_at, finalized, created)
           SELECT $1, $2 || '_' || i, 'AWS_US_WEST_2', $3, 'READY', $2 || '_' || i,
                  now() - interval '2 days', now() - interval '2 days', now() - interval '2 days', now() - interval '3 days'
             FROM generate_series(1, 1000) AS i
           RETURNING id)
         INSERT INTO database_claims (database_id, code_hash, client_address, created, expires_at)
         SELECT id, encode(sha256(convert_to(id::text, 'UTF8')), 'hex'), $2, now() - interval '3 days', now() - interval '2 days'
           FROM gone`,
        [holder.id, seed, await serverIdOf(t)],
      );
      const p = await provision();
      await t.dataSource.query(
        "UPDATE database_claims SET expires_at = now() - interval '1 second' WHERE database_id = $1",
        [p.database.id],
      );

      expect(await t.app.get(InstantDatabasesService).dropExpired()).toBeGreaterThanOrEqual(1);
      const row = await databaseRow(t, p.database.id);
      expect({ workspace: row.workspace_id, deleted: row.deleted !== null }).toEqual({
        workspace: holder.id,
        deleted: true,
      });
      expect(new Date(row.deletion_due_at!).getTime()).toBeLessThanOrEqual(Date.now());
    } finally {
      await t.dataSource.query('DELETE FROM database_claims WHERE client_address = $1', [seed]);
      await t.dataSource.query("DELETE FROM databases WHERE workspace_id = $1 AND name LIKE $2 || '%'", [
        holder.id,
        seed,
      ]);
    }
  });

  it('leaves no database without its claim when recording the link fails: 500, and the attempt still counts', async () => {
    const { address, recorded } = ownClient();
    const unlinked = () =>
      t.dataSource.query<{ id: string }[]>(
        `SELECT d.id FROM databases d JOIN workspaces w ON w.id = d.workspace_id
          WHERE w.slug = '~unclaimed' AND d.deleted IS NULL
            AND NOT EXISTS (SELECT 1 FROM database_claims c WHERE c.database_id = d.id)`,
      );
    expect(await unlinked()).toEqual([]);

    // Linking the claim to its new database fails, as a metadata error (or a crash) at that point would.
    const res = await withFailingRows(
      t.dataSource,
      {
        table: 'database_claims',
        on: 'UPDATE',
        when: `NEW.client_address = '${recorded}' AND NEW.database_id IS NOT NULL`,
      },
      () => t.http.post('/databases/provision').set('X-Forwarded-For', address).send({}),
    );
    expect({ status: res.status, body: res.body as unknown }).toEqual({
      status: 500,
      body: { errorCode: 'internal_error', message: 'An unexpected error occurred', statusCode: 500 },
    });
    expect(await unlinked()).toEqual([]);
    expect(
      await t.dataSource.query('SELECT database_id FROM database_claims WHERE client_address = $1', [recorded]),
    ).toEqual([{ database_id: null }]);

    // The next attempt from that address gets its database, linked to its claim.
    const next = await t.http.post('/databases/provision').set('X-Forwarded-For', address).send({});
    expect(next.status).toBe(201);
    const claims = await t.dataSource.query<{ database_id: string | null }[]>(
      'SELECT database_id FROM database_claims WHERE client_address = $1 ORDER BY created',
      [recorded],
    );
    expect(claims).toEqual([{ database_id: null }, { database_id: (next.body as Provisioned).database.id }]);
  });

  it('keeps honouring codes handed out before the operator turned instant databases off', async () => {
    const p = await provision();
    const off = await createTestApp({ INSTANT_DATABASES: 'off' });
    try {
      const ws = await createWorkspace(off, auth);
      const bad = await off.http.post(`/workspaces/${ws.slug}/databases/claim`).set(auth).send({ claimCode: 7 });
      expect({ status: bad.status, errorCode: bad.body.errorCode }).toEqual({ status: 400, errorCode: 'bad_request' });
      const claimed = await off.http
        .post(`/workspaces/${ws.slug}/databases/claim`)
        .set(auth)
        .send({ claimCode: p.claimCode });
      expect(claimed.status).toBe(200);
      expect(claimed.body).toMatchObject({ id: p.database.id, workspace: { id: ws.id, slug: ws.slug } });
      expect((await databaseRow(t, p.database.id)).workspace_id).toBe(ws.id);
    } finally {
      await off.close();
    }
  });
});

describe('instant database builds', () => {
  it('builds an instant database, whose request waits for it, before the builds no request waits for', async () => {
    const t = await createIsolatedTestApp({ DATABASE_POOL_TARGET: '0' });
    try {
      const queue = t.app.get<Queue>(getQueueToken(Queues.DatabaseLifecycle));
      // In the order they are taken from the queue (builds may run side by side, so may finish in another).
      const started: string[] = [];
      queue.on('active', (job: Job<{ databaseId?: string }>) => {
        if (job.data.databaseId) started.push(job.data.databaseId);
      });
      const { auth } = await createDeveloperWithToken(t.app);
      const ws = await createWorkspace(t, auth);
      // Three ordinary builds wait in the queue, then an instant database's.
      await queue.pause(true);
      for (let i = 0; i < 3; i++) {
        await t.http
          .post(`/workspaces/${ws.slug}/databases`)
          .set(auth)
          .send({ databaseName: `queued_${unique()}`, region: 'AWS_US_WEST_2' })
          .expect(201);
      }
      // Sent now (a supertest request only starts when awaited), answered once its build is done.
      const provision = t.http
        .post('/databases/provision')
        .send({})
        .then((answer) => answer);
      await eventually(async () => (await queue.getWaitingCount()) === 4);
      await queue.resume(true);
      const res = await provision;
      expect(res.status).toBe(201);
      await eventually(() => Promise.resolve(started.length === 4));
      expect(started[0]).toBe(res.body.database.id);
    } finally {
      await t.close();
    }
  });
});

describe('instant databases and the plans', () => {
  it('issues the instant credential whatever the FREE plan allows per database: the caller has no plan', async () => {
    const t = await createIsolatedTestApp({ PLAN_FREE_MAX_CREDENTIALS_PER_DATABASE: '0' });
    try {
      const res = await t.http.post('/databases/provision').send({});
      expect(res.status).toBe(201);
      await expect(queryWith((res.body as Provisioned).connectionString, 'SELECT 1')).resolves.toHaveLength(1);
      // A workspace on FREE is still held to it.
      const { auth } = await createDeveloperWithToken(t.app);
      const ws = await createWorkspace(t, auth);
      const db = await createReadyDatabase(t, auth, ws.slug);
      const refused = await t.http.post(`/workspaces/${ws.slug}/databases/${db.name}/credentials`).set(auth);
      expect(refused.status).toBe(403);
      expect(refused.body.errorCode).toBe('threshold_exceeded');
    } finally {
      await t.close();
    }
  });
});

describe('instant database abuse limits and the operator switch', () => {
  it('limits provisioning per client address and in all per hour with 429 and Retry-After', async () => {
    const t = await createTestApp({
      INSTANT_DATABASES_PER_ADDRESS_PER_HOUR: '2',
      INSTANT_DATABASES_PER_HOUR: '3',
      DATABASE_POOL_TARGET: '0',
    });
    try {
      // Only this spec provisions: earlier attempts of this run leave the window.
      await t.dataSource.query("UPDATE database_claims SET created = created - interval '2 hours'");
      const from = (address: string) => t.http.post('/databases/provision').set('X-Forwarded-For', address).send({});
      expect((await from('203.0.113.1')).status).toBe(201);
      expect((await from('203.0.113.1')).status).toBe(201);
      const perAddress = await from('203.0.113.1');
      expect(perAddress.status).toBe(429);
      expect(perAddress.body).toEqual({
        errorCode: 'threshold_exceeded',
        message: expect.stringMatching(/from your address/),
        statusCode: 429,
      });
      expect(Number(perAddress.headers['retry-after'])).toBeGreaterThan(3500);

      expect((await from('203.0.113.2')).status).toBe(201);
      const overall = await from('203.0.113.3');
      expect(overall.status).toBe(429);
      expect(overall.body.message).toMatch(/on this service/);
      expect(Number(overall.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      await t.close();
    }
  });

  it('counts an IPv6 client by its /64: other addresses of the same /64 share its allowance, another /64 has its own', async () => {
    const t = await createTestApp({
      INSTANT_DATABASES_PER_ADDRESS_PER_HOUR: '1',
      INSTANT_DATABASES_PER_HOUR: '1000',
      DATABASE_POOL_TARGET: '0',
    });
    try {
      const { subnet, recorded } = ownClient();
      const from = (address: string) => t.http.post('/databases/provision').set('X-Forwarded-For', address).send({});
      expect((await from(`${subnet}a`)).status).toBe(201);
      const sameHost = await from(`${subnet}b`);
      expect(sameHost.status).toBe(429);
      expect(sameHost.body.message).toMatch(/from your address/);
      expect((await from(`${subnet.replace(/::$/, ':0:0:1:b')}`)).status).toBe(429); // the same /64, written out
      expect((await from(ownClient().address)).status).toBe(201);
      expect(
        await t.dataSource.query('SELECT client_address FROM database_claims WHERE client_address = $1', [recorded]),
      ).toEqual([{ client_address: recorded }]);
    } finally {
      await t.close();
    }
  });

  it('counts provisions arriving at once from one address one by one: no more than the limit get a database', async () => {
    const t = await createTestApp({
      INSTANT_DATABASES_PER_ADDRESS_PER_HOUR: '2',
      INSTANT_DATABASES_PER_HOUR: '1000',
      DATABASE_POOL_TARGET: '0',
    });
    try {
      const { address, recorded } = ownClient();
      // Recording each attempt waits 0.3 s: the others count the address's attempts meanwhile.
      const answers: request.Response[] = await withSlowRows(
        t.dataSource,
        { table: 'database_claims', on: 'INSERT', when: `NEW.client_address = '${recorded}'`, seconds: 0.3 },
        () =>
          Promise.all(
            Array.from({ length: 4 }, () =>
              t.http.post('/databases/provision').set('X-Forwarded-For', address).send({}),
            ),
          ),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 429, 429]);
      for (const refused of answers.filter((a) => a.status === 429)) {
        expect(refused.body).toEqual({
          errorCode: 'threshold_exceeded',
          message: expect.stringMatching(/from your address/),
          statusCode: 429,
        });
      }
      const claims = await t.dataSource.query<{ database_id: string }[]>(
        'SELECT database_id FROM database_claims WHERE client_address = $1',
        [recorded],
      );
      expect(claims.map((c) => c.database_id).sort()).toEqual(
        answers
          .filter((a) => a.status === 201)
          .map((a) => (a.body as Provisioned).database.id)
          .sort(),
      );
    } finally {
      await t.close();
    }
  });

  it('gives back the place under the cap of an attempt that made no database (a region full): room again once there is', async () => {
    const t = await createIsolatedTestApp({
      INSTANT_DATABASES_MAX_UNCLAIMED: '1',
      INSTANT_DATABASES_PER_ADDRESS_PER_HOUR: '100',
      INSTANT_DATABASES_PER_HOUR: '1000',
      DATABASE_POOL_TARGET: '0',
    });
    try {
      const provision = () => t.http.post('/databases/provision').send({ region: 'AWS_US_WEST_2' });
      const capacity = await t.dataSource.query<{ id: string; max_databases: number }[]>(
        "SELECT id, max_databases FROM data_plane_servers WHERE region = 'AWS_US_WEST_2'",
      );
      await t.dataSource.query("UPDATE data_plane_servers SET max_databases = 0 WHERE region = 'AWS_US_WEST_2'");
      const full = await provision();
      expect(full.status).toBe(503);
      const [attempt] = await t.dataSource.query<{ database_id: string | null; live: boolean }[]>(
        'SELECT database_id, expires_at > now() AS live FROM database_claims',
      );
      expect(attempt).toEqual({ database_id: null, live: false });
      for (const { id, max_databases } of capacity)
        await t.dataSource.query('UPDATE data_plane_servers SET max_databases = $2 WHERE id = $1', [id, max_databases]);
      expect((await provision()).status).toBe(201);
    } finally {
      await t.close();
    }
  });

  it('caps the unclaimed instant databases alive at once: 429 with Retry-After over it, room again once one is claimed or its code expires', async () => {
    // A metadata database of its own: the count is of every live unclaimed code, other specs' included.
    const t = await createIsolatedTestApp({
      INSTANT_DATABASES_MAX_UNCLAIMED: '2',
      INSTANT_DATABASES_PER_ADDRESS_PER_HOUR: '100',
      INSTANT_DATABASES_PER_HOUR: '1000',
      DATABASE_POOL_TARGET: '0',
    });
    try {
      const from = (address: string) => t.http.post('/databases/provision').set('X-Forwarded-For', address).send({});
      // Three at once from three addresses, recording each attempt waiting 0.3 s: the others count
      // the live codes meanwhile, so only a count under the admissions' lock keeps to the cap.
      const first: request.Response[] = await withSlowRows(
        t.dataSource,
        { table: 'database_claims', on: 'INSERT', when: 'true', seconds: 0.3 },
        () => Promise.all(['198.51.100.1', '198.51.100.2', '198.51.100.3'].map((a) => from(a))),
      );
      expect(first.map((a) => a.status).sort()).toEqual([201, 201, 429]);
      const refused = first.find((a) => a.status === 429)!;
      expect(refused.body).toEqual({
        errorCode: 'threshold_exceeded',
        message: expect.stringMatching(/unclaimed instant databases/),
        statusCode: 429,
      });
      // Until the earliest live code expires (a claim may make room sooner).
      const retryAfter = Number(refused.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(86400 - 120);
      expect(retryAfter).toBeLessThanOrEqual(86400);
      const [a, b] = first.filter((r) => r.status === 201).map((r) => r.body as Provisioned);

      // A claimed database no longer counts.
      const auth = (await createDeveloperWithToken(t.app)).auth;
      const ws = await createWorkspace(t, auth);
      await t.http
        .post(`/workspaces/${ws.slug}/databases/claim`)
        .set(auth)
        .send({ claimCode: a.claimCode })
        .expect(200);
      expect((await from('198.51.100.4')).status).toBe(201);
      expect((await from('198.51.100.5')).status).toBe(429);

      // Nor does one whose code expired (the reconciler drops it).
      await t.dataSource.query(
        "UPDATE database_claims SET expires_at = now() - interval '1 second' WHERE database_id = $1",
        [b.database.id],
      );
      expect((await from('198.51.100.6')).status).toBe(201);
      expect((await from('198.51.100.7')).status).toBe(429);
      const [{ live }] = await t.dataSource.query<{ live: number }[]>(
        'SELECT count(*)::int AS live FROM database_claims WHERE claimed_at IS NULL AND expires_at > now()',
      );
      expect(live).toBe(2);
    } finally {
      await t.close();
    }
  });

  it('answers as for an unknown route beside it when the operator has turned instant databases off', async () => {
    const t = await createTestApp({ INSTANT_DATABASES: 'off' });
    try {
      // An unknown path under /databases/ is GET /databases/{id}'s: 405 with Allow: GET, as it is here.
      const res = await t.http.post('/databases/provision').send({});
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('GET');
      expect(res.body).toEqual({
        errorCode: 'unsupported_operation',
        message: 'POST is not supported on /databases/provision; use GET',
        statusCode: 405,
      });

      const { address, recorded } = ownClient();
      // Whatever the body, the answer is an unknown route's (a path of the same length beside it, that
      // no route serves, gets it): nothing tells that the route exists, not even a validation error.
      const comparable = (r: request.Response) => {
        const headers: Record<string, unknown> = { ...r.headers };
        delete headers.date;
        headers['x-request-id'] = typeof headers['x-request-id']; // one of its own on every answer
        return headers;
      };
      for (const body of [{}, { region: 'AWS_US_WEST_2' }, { region: 'X' }, { foo: 1 }, { region: 'X', foo: 1 }]) {
        const unknown = await t.http.post('/databases/provisiom').send(body);
        expect({ status: unknown.status, body: unknown.body as unknown }).toEqual({
          status: 405,
          body: {
            errorCode: 'unsupported_operation',
            message: 'POST is not supported on /databases/provisiom; use GET',
            statusCode: 405,
          },
        });
        const hidden = await t.http.post('/databases/provision').set('X-Forwarded-For', address).send(body);
        expect({ body, status: hidden.status, answer: hidden.body as unknown }).toEqual({
          body,
          status: 405,
          answer: {
            errorCode: 'unsupported_operation',
            message: 'POST is not supported on /databases/provision; use GET',
            statusCode: 405,
          },
        });
        expect(comparable(hidden)).toEqual(comparable(unknown));
      }
      // Nor another method at its path (the Allow of a 405 listed POST).
      for (const method of ['put', 'patch', 'delete', 'options'] as const) {
        const beside = await t.http[method]('/databases/provisiom');
        const at = await t.http[method]('/databases/provision');
        expect({ method, status: at.status, allow: at.headers.allow }).toEqual({
          method,
          status: beside.status,
          allow: beside.headers.allow,
        });
      }
      // Nor a body of a type the route does not read (its 415).
      const unknown = await t.http.post('/databases/provisiom').type('text/plain').send('region=X');
      const hidden = await t.http.post('/databases/provision').type('text/plain').send('region=X');
      expect({ status: hidden.status, allow: hidden.headers.allow }).toEqual({ status: 405, allow: 'GET' });
      expect(comparable(hidden)).toEqual(comparable(unknown));
      expect(await t.dataSource.query('SELECT id FROM database_claims WHERE client_address = $1', [recorded])).toEqual(
        [],
      );
    } finally {
      await t.close();
    }
  });
});
