import { Client } from 'pg';

/** Drops this run's metadata databases and whatever it left on the data plane. */
export default async function globalTeardown(): Promise<void> {
  const url = process.env.DATABASE_URL;
  if (url?.includes('/cp_test_')) {
    const admin = new URL(url);
    const name = admin.pathname.slice(1);
    admin.pathname = '/postgres';
    const client = new Client({ connectionString: admin.toString() });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`);
    // Specs that need a database of their own (test/support/own-database.ts) name it after the run's.
    const own = await client.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [
      `${name.replace(/_/g, '\\_')}\\_%`,
    ]);
    for (const { datname } of own.rows)
      await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(datname)} WITH (FORCE)`);
    await client.end();
  }
  const prefix = process.env.DATA_PLANE_NAME_PREFIX;
  if (!prefix || process.env.KEEP_TEST_DATA) return;
  // The fleet specs also use a second data-plane cluster.
  for (const dataPlaneUrl of [process.env.DATA_PLANE_URL, process.env.TEST_SECOND_DATA_PLANE_URL]) {
    if (dataPlaneUrl) await cleanDataPlane(dataPlaneUrl, prefix);
  }
}

async function cleanDataPlane(dataPlaneUrl: string, prefix: string): Promise<void> {
  const dp = new Client({ connectionString: dataPlaneUrl });
  await dp.connect();
  const like = `${prefix.replace(/_/g, '\\_')}%`;
  const dbs = await dp.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [like]);
  for (const { datname } of dbs.rows)
    await dp.query(`DROP DATABASE IF EXISTS ${dp.escapeIdentifier(datname)} WITH (FORCE)`);
  const members = await dp.query<{ rolname: string }>(
    `SELECT DISTINCT r.rolname FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member
         JOIN pg_roles o ON o.oid = m.roleid WHERE o.rolname LIKE $1`,
    [like],
  );
  const owners = await dp.query<{ rolname: string }>('SELECT rolname FROM pg_roles WHERE rolname LIKE $1', [like]);
  for (const { rolname } of [...members.rows, ...owners.rows]) {
    await dp.query(`DROP ROLE IF EXISTS ${dp.escapeIdentifier(rolname)}`).catch(() => undefined);
  }
  await dp.end();
}
