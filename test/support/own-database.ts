import { Client } from 'pg';
import { migrateDatabase } from '../../src/database/data-source-options';

/**
 * A freshly migrated metadata database of its own for a spec that must see every change made to
 * it (the fuzz suite compares checksums of every table) or must take it down (the outage tests),
 * which the run's shared database cannot allow while other spec files use it. Named after the
 * run's database, so global-teardown drops it even when the spec does not get to.
 */
export async function createOwnDatabase(label: string): Promise<string> {
  const url = new URL(process.env.DATABASE_URL!);
  const name = `${url.pathname.slice(1)}_${label}`;
  await withAdmin(async (admin) => {
    await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(name)} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(name)}`);
  });
  url.pathname = `/${name}`;
  await migrateDatabase(url.toString());
  return url.toString();
}

export async function dropOwnDatabase(databaseUrl: string): Promise<void> {
  const name = new URL(databaseUrl).pathname.slice(1);
  await withAdmin((admin) => admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(name)} WITH (FORCE)`));
}

/** Runs `work` on a connection to the metadata server's `postgres` database (never the one under test). */
export async function withAdmin<T>(work: (admin: Client) => Promise<T>): Promise<T> {
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = '/postgres';
  const admin = new Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.end();
  }
}
