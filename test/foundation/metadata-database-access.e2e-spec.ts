import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { ensureDatabaseExists, migrateDatabase } from '../../src/database/data-source-options';
import { createTestApp, type TestApp } from '../support/test-app';

/** The run's PostgreSQL as its superuser, on database `name`. */
function adminUrl(name: string): string {
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${name}`;
  return url.toString();
}

async function asAdmin<T>(work: (db: Client) => Promise<T>): Promise<T> {
  const db = new Client({ connectionString: adminUrl('postgres') });
  await db.connect();
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

describe('a metadata role that may connect to its own database only (not to `postgres`)', () => {
  const suffix = randomBytes(4).toString('hex');
  const role = `cp_metadata_role_${suffix}`;
  const database = `cp_metadata_only_${suffix}`;
  const roleUrl = (() => {
    const url = new URL(adminUrl(database));
    url.username = role;
    url.password = '';
    return url.toString();
  })();
  let publicCouldConnect = false;

  beforeAll(async () => {
    await asAdmin(async (db) => {
      await db.query(`CREATE ROLE ${role} LOGIN`);
      await db.query(`CREATE DATABASE ${database} OWNER ${role}`);
      // The hardening itself: nobody but superusers and explicit grantees may connect to `postgres`
      // (what was there is put back after).
      const { rows } = await db.query<{ connect: boolean }>(
        "SELECT has_database_privilege('public', 'postgres', 'CONNECT') AS connect",
      );
      publicCouldConnect = rows[0].connect;
      await db.query('REVOKE CONNECT ON DATABASE postgres FROM PUBLIC');
    });
  });

  afterAll(async () => {
    await asAdmin(async (db) => {
      if (publicCouldConnect) await db.query('GRANT CONNECT ON DATABASE postgres TO PUBLIC');
      await db.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await db.query(`DROP ROLE IF EXISTS ${role}`);
    });
  });

  it('is refused by `postgres` (the premise)', async () => {
    const url = new URL(roleUrl);
    url.pathname = '/postgres';
    const db = new Client({ connectionString: url.toString() });
    await expect(db.connect()).rejects.toMatchObject({ code: '42501' });
    await db.end().catch(() => undefined);
  });

  it('migrates its metadata database and starts the app', async () => {
    await expect(migrateDatabase(roleUrl)).resolves.toBeInstanceOf(Array);
    let t: TestApp | undefined;
    try {
      t = await createTestApp({ DATABASE_URL: roleUrl, WORKERS: 'off', DATABASE_POOL_TARGET: '0' });
      await t.http.get('/health/live').expect(200);
      expect(await t.dataSource.query('SELECT current_user AS who')).toEqual([{ who: role }]);
    } finally {
      await t?.close();
    }
  }, 60000);

  it('still creates a metadata database that does not exist (a role that may)', async () => {
    const fresh = `cp_metadata_new_${suffix}`;
    try {
      await ensureDatabaseExists(adminUrl(fresh));
      const exists = await asAdmin((db) => db.query('SELECT 1 FROM pg_database WHERE datname = $1', [fresh]));
      expect(exists.rowCount).toBe(1);
      // A second start finds it.
      await ensureDatabaseExists(adminUrl(fresh));
    } finally {
      await asAdmin((db) => db.query(`DROP DATABASE IF EXISTS ${fresh} WITH (FORCE)`));
    }
  });
});
