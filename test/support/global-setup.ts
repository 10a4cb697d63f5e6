import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { migrateDatabase } from '../../src/database/data-source-options';

/**
 * Each test run gets its own freshly migrated metadata database (dropped in global-teardown),
 * its own secrets file and its own physical-name prefix on the data plane, so runs never collide.
 */
export default async function globalSetup(): Promise<void> {
  const runId = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  const adminUrl = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const url = new URL(adminUrl);
  url.pathname = `/cp_test_${runId}`;
  process.env.TEST_RUN_ID = runId;
  process.env.DATABASE_URL = url.toString();
  process.env.SECRETS_FILE = join(mkdtempSync(join(tmpdir(), 'cp-test-')), 'secrets.json');
  process.env.DATA_PLANE_NAME_PREFIX = `t${runId}_`;
  process.env.NODE_ENV = 'test';
  await migrateDatabase(process.env.DATABASE_URL);
  if (!process.env.DATA_PLANE_URL) {
    throw new Error('DATA_PLANE_URL is not set: run the tests with `npm test` (it starts the data-plane cluster)');
  }
  const dataPlane = new Client({ connectionString: process.env.DATA_PLANE_URL });
  await dataPlane.connect();
  await dataPlane.end();
}
