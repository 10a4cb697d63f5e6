#!/usr/bin/env node
/**
 * Baseline of the two data-plane writes: raw SQL over pg behind a bare node:http server (the
 * service is measured over HTTP too), no logging, no metadata database, no queue.
 *
 *   POST /databases?physical=NAME  runs the statements DataPlane.buildDatabase runs (owner role,
 *     the rolsuper check, CREATE DATABASE held by the holder role with the default connection limit,
 *     REVOKE on the database and the owner role's GRANT, then on a connection to the new database:
 *     REVOKE on schema public, ALTER SCHEMA public OWNER) and answers when they are done. The holder
 *     role (one per deployment) is made once at start; the service checks for it in each build's
 *     first round trip.
 *     The service also reads whether the database came out hardened (sent with its last admin
 *     statement) and writes its metadata rows: that is its overhead, not the baseline's.
 *   POST /databases/NAME/credentials  makes a password, computes its SCRAM-SHA-256 verifier (4096
 *     iterations, as src/data-plane/scram.ts) and runs DataPlane.createLoginRole's transaction on a
 *     connection to the database; answers {id, password}.
 *
 * Admin pool as the service's DataPlane: max 4, 5 s connect timeout. Environment: DATA_PLANE_URL.
 * Prints `listening <port>` when ready.
 */
const { createHash, createHmac, pbkdf2, randomBytes, randomUUID } = require('node:crypto');
const { createServer } = require('node:http');
const { Client, Pool, escapeIdentifier, escapeLiteral } = require('pg');

const adminUrl = process.env.DATA_PLANE_URL;
const pool = new Pool({
  connectionString: adminUrl,
  max: 4,
  idleTimeoutMillis: 10000,
  connectionTimeoutMillis: 5000,
  application_name: 'bench-baseline',
});
const NAME = /^[a-z][a-z0-9_]{0,56}$/;
/** The service's DATA_PLANE_DEFAULT_CONNECTION_LIMIT default. */
const CONNECTION_LIMIT = 20;
const HOLDER = escapeIdentifier('bench_baseline_databases');

async function holderReady() {
  const { rows } = await pool.query("SELECT 1 FROM pg_roles WHERE rolname = 'bench_baseline_databases'");
  if (!rows.length) await pool.query(`CREATE ROLE ${HOLDER} NOLOGIN`);
  const { rows: su } = await pool.query('SELECT rolsuper FROM pg_roles WHERE rolname = current_user');
  if (!su[0]?.rolsuper) await pool.query(`GRANT ${HOLDER} TO CURRENT_USER`);
}

function scramVerifier(password) {
  const salt = randomBytes(16);
  return new Promise((resolve, reject) =>
    pbkdf2(password, salt, 4096, 32, 'sha256', (err, salted) => {
      if (err) return reject(err);
      const clientKey = createHmac('sha256', salted).update('Client Key').digest();
      const storedKey = createHash('sha256').update(clientKey).digest();
      const serverKey = createHmac('sha256', salted).update('Server Key').digest();
      resolve(
        `SCRAM-SHA-256$4096:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`,
      );
    }),
  );
}

async function onDatabase(physical, work) {
  const url = new URL(adminUrl);
  url.pathname = `/${physical}`;
  const db = new Client({
    connectionString: url.toString(),
    connectionTimeoutMillis: 5000,
    application_name: 'bench-baseline',
  });
  await db.connect();
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

async function buildDatabase(physical) {
  const o = escapeIdentifier(`${physical}_owner`);
  const d = escapeIdentifier(physical);
  const admin = await pool.connect();
  try {
    await admin.query(`CREATE ROLE ${o} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS`);
    const { rows } = await admin.query('SELECT rolsuper FROM pg_roles WHERE rolname = current_user');
    if (!rows[0]?.rolsuper) await admin.query(`GRANT ${o} TO CURRENT_USER`);
    await admin.query(`CREATE DATABASE ${d} OWNER ${HOLDER} CONNECTION LIMIT ${CONNECTION_LIMIT}`);
    await admin.query(`REVOKE ALL ON DATABASE ${d} FROM PUBLIC`);
    await admin.query(`GRANT CONNECT, CREATE, TEMPORARY ON DATABASE ${d} TO ${o}`);
  } finally {
    admin.release();
  }
  await onDatabase(physical, async (db) => {
    await db.query('REVOKE ALL ON SCHEMA public FROM PUBLIC');
    await db.query(`ALTER SCHEMA public OWNER TO ${o}`);
  });
}

async function createCredential(physical) {
  const id = randomUUID();
  const password = randomBytes(32).toString('base64url');
  const verifier = await scramVerifier(password);
  const owner = `${physical}_owner`;
  await onDatabase(physical, async (db) => {
    const r = escapeIdentifier(id);
    const o = escapeIdentifier(owner);
    await db.query('BEGIN');
    await db.query(
      `CREATE ROLE ${r} LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD ${escapeLiteral(verifier)} IN ROLE ${o}`,
    );
    await db.query(`ALTER ROLE ${r} IN DATABASE ${escapeIdentifier(physical)} SET role = ${escapeLiteral(owner)}`);
    for (const kind of ['TABLES', 'SEQUENCES', 'FUNCTIONS', 'TYPES', 'SCHEMAS']) {
      await db.query(`ALTER DEFAULT PRIVILEGES FOR ROLE ${r} GRANT ALL ON ${kind} TO ${o}`);
    }
    await db.query('COMMIT');
  });
  return { id, password };
}

const server = createServer(async (req, res) => {
  const url = new URL(req.url, 'http://baseline');
  const send = (status, body) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  try {
    const credential = /^\/databases\/([^/]+)\/credentials$/.exec(url.pathname);
    if (req.method === 'POST' && url.pathname === '/databases' && NAME.test(url.searchParams.get('physical') ?? '')) {
      await buildDatabase(url.searchParams.get('physical'));
      return send(201, { physical: url.searchParams.get('physical') });
    }
    if (req.method === 'POST' && credential && NAME.test(credential[1]))
      return send(200, await createCredential(credential[1]));
    send(404, { message: 'no such route' });
  } catch (err) {
    send(500, { message: err.message });
  }
});
holderReady().then(
  () => server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`)),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
process.on('SIGTERM', () => process.exit(0));
