import { Client } from 'pg';
import { DataSource, DataSourceOptions } from 'typeorm';
import { MIGRATIONS } from '../migrations';
import { ENTITIES } from './entities';

/** SQLSTATE of a connection to a database that does not exist. */
const INVALID_CATALOG_NAME = '3D000';

/** Limits every metadata session carries (0 or absent: none). */
export interface SessionTimeouts {
  /**
   * `lock_timeout`: no statement waits longer for a row or advisory lock, whoever holds it (a lock
   * is only ever held for local work, habit 14, so a wait that long means something is wrong; the
   * request answers 503 and the job retries).
   */
  lockMs?: number;
  /**
   * `idle_in_transaction_session_timeout`: the server ends a session that waits longer than this
   * inside a transaction, letting its locks go. A transaction only waits on the process between
   * statements (habit 14), so a wait that long is a process stopped or a network gone silent
   * mid-transaction; without it the server held that session's locks (a region's placement lock:
   * every create of the region) for as long as its TCP connection lived.
   */
  idleInTransactionMs?: number;
}

/** `-c` options of the session settings that are set (PostgreSQL's startup `options`). */
function sessionOptions(timeouts: SessionTimeouts): string | undefined {
  const settings = [
    ['lock_timeout', timeouts.lockMs],
    ['idle_in_transaction_session_timeout', timeouts.idleInTransactionMs],
  ]
    .filter((setting): setting is [string, number] => typeof setting[1] === 'number' && setting[1] > 0)
    .map(([name, ms]) => `-c ${name}=${Math.trunc(ms)}`);
  return settings.length ? settings.join(' ') : undefined;
}

/** The one TypeORM configuration, used by the app, the migration CLI (ormconfig.ts) and the tests. */
export function dataSourceOptions(url: string, poolSize = 4, timeouts: SessionTimeouts = {}): DataSourceOptions {
  const options = sessionOptions(timeouts);
  return {
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    synchronize: false,
    migrationsRun: false,
    uuidExtension: 'pgcrypto',
    installExtensions: false,
    // `min`: the pool keeps its connections through an idle spell. Without it pg-pool closes each
    // after 10 idle seconds, and the first burst after a lull waited for new connections, whose new
    // backends then prepared the hot statements again (hot-query.ts) with cold caches: measured
    // with `npm run bench`, see the README's Performance.
    extra: {
      max: poolSize,
      min: poolSize,
      connectionTimeoutMillis: 5000,
      // TCP keepalive on the pooled connections (kept through idle spells, `min`): one to a server
      // that vanished without a word (a crash, a failover to another address) errors out and leaves
      // the pool instead of being handed to the next request.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10000,
      ...(options ? { options } : {}),
    },
    // Failed queries are logged by the error filter without their parameters (they can hold hashes).
    logging: ['warn', 'migration'],
  };
}

/**
 * Creates the metadata database when it does not exist yet (first run just works). The database
 * itself is tried first: a role that may connect to it and not to `postgres` (a common hardening,
 * and the usual grant on managed PostgreSQL) starts as well. Only when it does not exist (3D000)
 * is it created, from the `postgres` database.
 */
export async function ensureDatabaseExists(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  const existing = new Client({ connectionString: url });
  try {
    await existing.connect();
    await existing.end();
    return;
  } catch (err) {
    await existing.end().catch(() => undefined);
    if ((err as { code?: string }).code !== INVALID_CATALOG_NAME) throw err;
  }
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`).catch((err: { code?: string }) => {
      if (err.code !== '42P04' && err.code !== '23505') throw err; // created concurrently by another process
    });
  } finally {
    await client.end();
  }
}

/**
 * Runs pending migrations under an advisory lock, so an API and a worker starting together
 * never run them twice.
 */
export async function migrateDatabase(url: string): Promise<string[]> {
  await ensureDatabaseExists(url);
  const dataSource = new DataSource(dataSourceOptions(url, 1));
  await dataSource.initialize();
  try {
    await dataSource.query('SELECT pg_advisory_lock(727274)');
    try {
      const done = await dataSource.runMigrations({ transaction: 'each' });
      await closeToPublic(dataSource);
      return done.map((m) => m.name);
    } finally {
      await dataSource.query('SELECT pg_advisory_unlock(727274)');
    }
  } finally {
    await dataSource.destroy();
  }
}

/**
 * Closes the metadata database to PUBLIC (CONNECT and TEMPORARY), which PostgreSQL grants on every
 * new database: when the metadata database shares a PostgreSQL server with the data plane (the
 * default configuration, and a small install's usual one), every customer credential could
 * otherwise connect to it, read its schema, and hold the advisory locks the control plane takes
 * (a placement lock held for ever stops every database create). The role migrating keeps an
 * explicit grant. On every start, so an existing install is closed at its upgrade; a role that may
 * not change the database's grants (neither its owner nor a superuser) only gets a warning.
 */
async function closeToPublic(dataSource: DataSource): Promise<void> {
  const isOpen = async () =>
    (
      await dataSource.query<{ open: boolean }[]>(
        `SELECT has_database_privilege('public', current_database(), 'CONNECT')
             OR has_database_privilege('public', current_database(), 'TEMPORARY') AS open`,
      )
    )[0].open;
  if (!(await isOpen())) return;
  // A role that is neither owner nor superuser revokes nothing, with a notice rather than an error.
  let why = 'the role migrating may not change its grants';
  try {
    await dataSource.query(`DO $$ BEGIN
      EXECUTE format('GRANT CONNECT, TEMPORARY ON DATABASE %I TO CURRENT_USER', current_database());
      EXECUTE format('REVOKE CONNECT, TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
    END $$`);
  } catch (err) {
    why = (err as Error).message;
  }
  if (!(await isOpen())) return;
  // Before Nest starts (bootstrapChecks): straight to standard error, as its other start-up messages.
  process.stderr.write(
    `warning: the metadata database stays open to PUBLIC, so every role of its server may connect to it (${why})\n`,
  );
}
