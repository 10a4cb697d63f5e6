import { randomInt } from 'node:crypto';
import { WarmPool } from '../../src/databases/warm-pool.service';
import { TcpRelay } from '../support/tcp-relay';
import { createIsolatedTestApp, eventually, reconcile, TestApp } from '../support/test-app';
import { databaseRow, physicalDatabaseExists } from './support';

/**
 * Instant databases while their data-plane server fails them. The region's one server is the test
 * data plane behind a relay this spec can take down, on a metadata database of its own (its fleet
 * differs from everyone else's).
 */
describe('instant databases when the data plane fails a provision', () => {
  let t: TestApp;
  let link: TcpRelay;

  beforeAll(async () => {
    link = await TcpRelay.inFrontOf(process.env.DATA_PLANE_URL!);
    t = await createIsolatedTestApp({
      DATA_PLANE_URL: link.through(process.env.DATA_PLANE_URL!),
      DATA_PLANE_CONNECT_TIMEOUT_MS: '1000',
      DATABASE_POOL_TARGET: '1',
      INSTANT_DATABASES_PER_ADDRESS_PER_HOUR: '1',
    });
  }, 120000);
  afterAll(async () => {
    await t?.close();
    await link?.down();
  });

  /** An address of its own (each test gets its own allowance). */
  const ownAddress = () => `198.51.100.${randomInt(1, 255)}`;
  const from = (address: string) => t.http.post('/databases/provision').set('X-Forwarded-For', address).send({});

  /** The address's claims, and the state of the database each names. */
  const claimsOf = (address: string) =>
    t.dataSource.query<{ databaseId: string | null; claimable: boolean; databaseLive: boolean | null }[]>(
      `SELECT c.database_id AS "databaseId", (c.claimed_at IS NULL AND c.expires_at > now()) AS claimable,
              (d.deleted IS NULL) AS "databaseLive"
         FROM database_claims c LEFT JOIN databases d ON d.id = c.database_id
        WHERE c.client_address = $1 ORDER BY c.created`,
      [address],
    );

  it('deletes at once the pooled database whose credential the server fails, leaves no code claimable, answers 503 with Retry-After, and leaves the address its allowance', async () => {
    const address = ownAddress();
    // A pooled database is at hand: the provision takes it without the data plane, then the server
    // stops answering before its credential is made.
    const pool = t.app.get(WarmPool);
    await pool.requestRefillEverywhere();
    await eventually(async () => (await pool.readyCount('AWS_US_WEST_2')) >= 1, 30000);
    await link.down();
    let failed;
    try {
      failed = await from(address);
    } finally {
      await link.up();
    }
    // The failure was the service's: the address (1 an hour here) may try again at once, and gets one.
    const next = await from(address);
    const claims = await claimsOf(address);
    expect({
      status: failed.status,
      errorCode: failed.body.errorCode as unknown,
      retryAfter: failed.headers['retry-after'],
      claims,
      next: next.status,
    }).toEqual({
      status: 503,
      errorCode: 'credential_creation_failure',
      retryAfter: '5',
      // Its database is queued for deletion due now (not held for the code's 24 hours), and its code
      // can never be claimed.
      claims: [
        { databaseId: expect.any(String), claimable: false, databaseLive: false },
        { databaseId: expect.any(String), claimable: true, databaseLive: true },
      ],
      next: 201,
    });
    const row = await databaseRow(t, claims[0].databaseId!);
    expect(new Date(row.deletion_due_at!).getTime()).toBeLessThanOrEqual(Date.now());

    // Once the server answers, the half-made database is dropped like any deletion due.
    await eventually(async () => {
      await reconcile(t.app);
      return (await databaseRow(t, claims[0].databaseId!)).finalized;
    }, 30000);
    expect(await physicalDatabaseExists(row.physical_name)).toBe(false);
  });
});

describe('instant databases when the data plane is slow to build one', () => {
  /** How long a provision waits for its build here (INSTANT_DATABASE_BUILD_WAIT_MS; 30 s by default). */
  const BUILD_WAIT_MS = 1500;
  let t: TestApp;
  let link: TcpRelay;

  beforeAll(async () => {
    link = await TcpRelay.inFrontOf(process.env.DATA_PLANE_URL!);
    t = await createIsolatedTestApp({
      DATA_PLANE_URL: link.through(process.env.DATA_PLANE_URL!),
      DATA_PLANE_CONNECT_TIMEOUT_MS: '1000',
      // A CREATE DATABASE may take this long (its client gives up 1 s after): 120 s by default.
      DATA_PLANE_DATABASE_DDL_TIMEOUT_MS: '20000',
      DATABASE_POOL_TARGET: '0',
      INSTANT_DATABASE_BUILD_WAIT_MS: String(BUILD_WAIT_MS),
    });
  }, 120000);
  afterAll(async () => {
    link?.release();
    await t?.close();
    await link?.down();
  });

  it('answers 503 with Retry-After within its build wait while CREATE DATABASE hangs, and the job builds and then drops what it abandoned', async () => {
    const address = `198.51.100.${randomInt(1, 255)}`;
    // The server takes every CREATE DATABASE for ever (as when it waits on a slow checkpoint).
    link.hold(/CREATE DATABASE/);
    let answered;
    const start = Date.now();
    try {
      answered = await t.http.post('/databases/provision').set('X-Forwarded-For', address).send({});
    } finally {
      setTimeout(() => link.release(), 1000); // the build goes on a little longer, then ends
    }
    const elapsedMs = Date.now() - start;
    const buildHanging = link.heldBackCount > 0;
    const [claim] = await t.dataSource.query<{ databaseId: string; claimable: boolean; failed: boolean }[]>(
      `SELECT database_id AS "databaseId", (claimed_at IS NULL AND expires_at > now()) AS claimable,
              failed_at IS NOT NULL AS failed
         FROM database_claims WHERE client_address = $1`,
      [address],
    );
    const row = await databaseRow(t, claim.databaseId);
    expect({
      status: answered.status,
      body: answered.body as unknown,
      retryAfter: answered.headers['retry-after'],
      withinItsWait: elapsedMs < BUILD_WAIT_MS + 3000 ? true : `${elapsedMs} ms`,
      buildHanging,
      claim,
      deleted: row.deleted !== null,
    }).toEqual({
      status: 503,
      body: {
        errorCode: 'db_creation_failure',
        message: expect.stringMatching(/not built within/),
        statusCode: 503,
      },
      retryAfter: '5',
      withinItsWait: true,
      buildHanging: true,
      claim: { databaseId: expect.any(String), claimable: false, failed: true },
      deleted: true,
    });

    // The build was the job's: once the server answers it ends, and the deletion due drops the
    // database after it (they take turns under the database's lock on the server).
    await eventually(async () => {
      await reconcile(t.app);
      return (await databaseRow(t, claim.databaseId)).finalized;
    }, 45000);
    expect(await physicalDatabaseExists(row.physical_name)).toBe(false);
  }, 90000);
});

describe('instant databases while the region has no room', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createIsolatedTestApp({ INSTANT_DATABASES_PER_ADDRESS_PER_HOUR: '2', DATABASE_POOL_TARGET: '0' });
  }, 120000);
  afterAll(() => t?.close());

  it('answers 503 with Retry-After and leaves the address its allowance: the retry the 503 asks for, once there is room, gets its database', async () => {
    const provision = () =>
      t.http.post('/databases/provision').set('X-Forwarded-For', '198.51.100.7').send({ region: 'AWS_US_WEST_2' });
    const servers = await t.dataSource.query<{ id: string; max_databases: number }[]>(
      "SELECT id, max_databases FROM data_plane_servers WHERE region = 'AWS_US_WEST_2'",
    );
    await t.dataSource.query("UPDATE data_plane_servers SET max_databases = 0 WHERE region = 'AWS_US_WEST_2'");
    for (let i = 0; i < 2; i++) {
      const full = await provision();
      expect(full.status).toBe(503);
      expect(full.body).toMatchObject({ errorCode: 'db_creation_failure', statusCode: 503 });
      expect(full.headers['retry-after']).toBe('5');
    }
    for (const { id, max_databases } of servers) {
      await t.dataSource.query('UPDATE data_plane_servers SET max_databases = $2 WHERE id = $1', [id, max_databases]);
    }
    const retry = await provision();
    expect({ status: retry.status, body: retry.status === 201 ? 'created' : retry.body }).toEqual({
      status: 201,
      body: 'created',
    });
    // The two refused attempts are recorded as the service's failures, claimable by no one.
    expect(
      await t.dataSource.query<{ failed: boolean; claimable: boolean }[]>(
        `SELECT failed_at IS NOT NULL AS failed, (claimed_at IS NULL AND expires_at > now()) AS claimable
           FROM database_claims WHERE database_id IS NULL`,
      ),
    ).toEqual([
      { failed: true, claimable: false },
      { failed: true, claimable: false },
    ]);
  }, 120000);
});
