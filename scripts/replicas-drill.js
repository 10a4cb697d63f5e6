#!/usr/bin/env node
'use strict';
/*
 * Replicas drill (issue 9, "Stateless replicas — Show it").
 *
 * Usage: npm run build && npm run drill
 *   (the drill builds nothing: it runs dist/src/main.js, dist/src/worker.js and dist/src/cli.js;
 *    it needs PostgreSQL on 5432, Redis on 6379, nginx, and root for scripts/dataplane-cluster.sh)
 *
 * Starts two API processes (WORKERS=off) and two workers against one fresh metadata database and one
 * Redis prefix, two data-plane clusters registered in AWS_US_WEST_2, nginx in front of the APIs, and an
 * in-process SMTP sink. Drives a steady mixed load through nginx (database creates, credential creates,
 * reads, invites) with a client that retries a failed request once (a create is retried only after a
 * GET shows it does not exist), SIGKILLs one API process and one worker mid-run, lets the work settle,
 * and checks: every database created is READY exactly once and lives on exactly one server, every invite
 * e-mail arrived exactly once, no request failed after its retry, both servers got databases.
 * Prints a JSON summary and PASS/FAIL; cleans up everything it made; exits 0 on PASS, 1 on FAIL.
 *
 * Knobs (environment): DRILL_SECONDS (40), DRILL_KILL_AT_SECONDS (15), DRILL_CONCURRENCY (6),
 * DRILL_MAX_REQUESTS (1500), DRILL_SETTLE_SECONDS (150), DRILL_KEEP_LOGS=1 (keep the temp dir).
 */
const { spawn, execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { Client } = require('pg');

const ROOT = path.resolve(__dirname, '..');
const REGION = 'AWS_US_WEST_2';
const ADMIN_URL = process.env.DRILL_ADMIN_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const SECONDS = Number(process.env.DRILL_SECONDS || 40);
const KILL_AT = Number(process.env.DRILL_KILL_AT_SECONDS || 15);
const CONCURRENCY = Number(process.env.DRILL_CONCURRENCY || 6);
const MAX_REQUESTS = Number(process.env.DRILL_MAX_REQUESTS || 1500);
// An invite e-mail leased by the killed worker waits out its lease (120 s) before another worker sends it.
const SETTLE_SECONDS = Number(process.env.DRILL_SETTLE_SECONDS || 150);

const started = Date.now();
const elapsed = () => ((Date.now() - started) / 1000).toFixed(1);
const log = (...args) => console.error(`[drill ${elapsed()}s]`, ...args);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const run = crypto.randomBytes(4).toString('hex');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `replicas-drill-${run}-`));
fs.chmodSync(tmp, 0o755);
const metaDb = `drill_${run}`;
const queuePrefix = `drill-${run}`;
const namePrefix = `drl${run}_`;
const children = []; // { name, proc }
let smtp;
let clusterUrls = [];

function usage() {
  console.error('Usage: npm run build && npm run drill   (the drill runs dist/; it builds nothing)');
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function withDatabase(url, name) {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

async function sql(url, text, params = []) {
  const c = new Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    return (await c.query(text, params)).rows;
  } finally {
    await c.end().catch(() => {});
  }
}

// ---------- SMTP sink ----------
const mail = { byRecipient: new Map(), total: 0, lastAt: 0 };
function startSmtp() {
  const { SMTPServer } = require('smtp-server');
  return new Promise((resolve, reject) => {
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      logger: false,
      onData(stream, session, cb) {
        stream.on('data', () => {});
        stream.on('end', () => {
          for (const r of session.envelope.rcptTo) {
            const to = r.address.toLowerCase();
            mail.byRecipient.set(to, (mail.byRecipient.get(to) || 0) + 1);
          }
          mail.total++;
          mail.lastAt = Date.now();
          cb();
        });
      },
    });
    server.on('error', (err) => log('smtp error', err.message));
    server.listen(0, '127.0.0.1', () => resolve({ server, port: server.server.address().port }));
    server.server.once('error', reject);
  });
}

// ---------- processes ----------
function startProcess(name, command, args, env) {
  const out = fs.openSync(path.join(tmp, `${name}.log`), 'a');
  const proc = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  const child = { name, proc, exited: false };
  proc.on('exit', (code, signal) => {
    child.exited = true;
    child.exit = signal || code;
  });
  children.push(child);
  return child;
}

async function waitReady(child, port, timeoutMs = 90_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exited) throw new Error(`${child.name} exited (${child.exit}); see ${tmp}/${child.name}.log`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health/ready`, { signal: AbortSignal.timeout(2000) });
      if (res.status === 200) return;
    } catch {
      /* not yet */
    }
    await sleep(300);
  }
  throw new Error(`${child.name} not ready within ${timeoutMs / 1000}s; see ${tmp}/${child.name}.log`);
}

function cli(env, args, input) {
  const out = execFileSync(process.execPath, ['dist/src/cli.js', ...args], {
    cwd: ROOT,
    env,
    input,
    encoding: 'utf8',
    stdio: ['pipe', 'pipe', 'pipe'],
    timeout: 120_000,
  });
  const lines = out.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]);
}

function nginxConfig(port, apiPorts) {
  return `worker_processes 1;
error_log ${tmp}/nginx-error.log warn;
pid ${tmp}/nginx.pid;
events { worker_connections 512; }
http {
  access_log ${tmp}/nginx-access.log;
  client_body_temp_path ${tmp}/nginx-client-body;
  proxy_temp_path ${tmp}/nginx-proxy;
  fastcgi_temp_path ${tmp}/nginx-fastcgi;
  uwsgi_temp_path ${tmp}/nginx-uwsgi;
  scgi_temp_path ${tmp}/nginx-scgi;
  # fail_timeout 5s: nginx tries the killed API again every 5 s during the load (connection refused:
  # the request, POST included, goes to the other one since nothing was sent).
  upstream api {
${apiPorts.map((p) => `    server 127.0.0.1:${p} max_fails=1 fail_timeout=5s;`).join('\n')}
    keepalive 16;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://api;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      # Idempotent requests go to the other API when one does not answer; a POST that reached an API
      # is never sent again (nginx's default: no "non_idempotent" here). The client decides that.
      proxy_next_upstream error timeout;
      proxy_connect_timeout 2s;
      proxy_read_timeout 30s;
    }
  }
}
`;
}

// ---------- the client ----------
const stats = { requests: 0, byOp: {}, rawFailures: [], finalFailures: [], retriesFoundDone: 0 };
let base;
let token;

async function request(method, urlPath, body) {
  stats.requests++;
  const t0 = Date.now();
  try {
    const res = await fetch(`${base}${urlPath}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    let json;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = text;
    }
    return { status: res.status, json, ms: Date.now() - t0 };
  } catch (err) {
    return { status: 0, error: err.cause?.code || err.message, ms: Date.now() - t0 };
  }
}

function failed(res, ok) {
  return !ok.includes(res.status);
}

function describe(op, method, urlPath, res) {
  return {
    at: Number(elapsed()),
    op,
    request: `${method} ${urlPath}`,
    status: res.status,
    error: res.error || res.json?.errorCode,
    message: res.error ? undefined : res.json?.message,
  };
}

/**
 * One logical operation: `attempt` runs the request; on a failure, `alreadyDone` (a GET) decides whether
 * the first attempt took effect before `attempt` runs again. Never more than one retry.
 */
async function op(name, attempt, ok, alreadyDone) {
  stats.byOp[name] = (stats.byOp[name] || 0) + 1;
  const first = await attempt();
  if (!failed(first.res, ok)) return first.res;
  stats.rawFailures.push(describe(name, first.method, first.path, first.res));
  await sleep(200);
  if (alreadyDone) {
    const done = await alreadyDone();
    if (done) {
      stats.retriesFoundDone++;
      return done;
    }
  }
  const second = await attempt();
  if (!failed(second.res, ok)) return second.res;
  stats.finalFailures.push(describe(name, second.method, second.path, second.res));
  return undefined;
}

// ---------- main ----------
async function main() {
  if (!fs.existsSync(path.join(ROOT, 'dist/src/main.js')) || !fs.existsSync(path.join(ROOT, 'dist/src/cli.js'))) {
    usage();
    throw new Error('dist/ is missing: run `npm run build` first');
  }
  usage();
  log(
    `run ${run}: metadata ${metaDb}, QUEUE_PREFIX ${queuePrefix}, DATA_PLANE_NAME_PREFIX ${namePrefix}, logs in ${tmp}`,
  );

  clusterUrls = [
    execFileSync('bash', ['scripts/dataplane-cluster.sh'], { cwd: ROOT, encoding: 'utf8' }).trim().split('\n').pop(),
    execFileSync('bash', ['scripts/dataplane-cluster.sh'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, DATAPLANE_NAME: 'dataplane2', DATAPLANE_PORT: '5434' },
    })
      .trim()
      .split('\n')
      .pop(),
  ];

  smtp = await startSmtp();
  const nginxPort = await freePort();
  const apiPorts = [await freePort(), await freePort()];
  const workerPorts = [await freePort(), await freePort()];

  const { privateKey } = crypto.generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    LOG_LEVEL: process.env.DRILL_LOG_LEVEL || 'warn',
    DATABASE_URL: withDatabase(ADMIN_URL, metaDb),
    REDIS_URL,
    QUEUE_PREFIX: queuePrefix,
    DATA_PLANE_NAME_PREFIX: namePrefix,
    DATA_PLANE_URL: clusterUrls[0],
    DATABASE_POOL_TARGET: '0',
    SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
    PUBLIC_URL: `http://127.0.0.1:${nginxPort}`,
    JWT_PRIVATE_KEY: privateKey,
    CREDENTIAL_ENCRYPTION_KEYS: `k1:${crypto.randomBytes(32).toString('base64')}`,
    SECRETS_FILE: path.join(tmp, 'secrets.json'),
    PLAN_FREE_MAX_DATABASES: 'unlimited',
    PLAN_FREE_MAX_CREDENTIALS_PER_DATABASE: 'unlimited',
    // One developer sends every invite of the drill (up to a few hundred).
    INVITES_PER_SENDER_PER_HOUR: '100000',
    INVITES_PER_HOUR: '100000',
    RECONCILE_INTERVAL_SECONDS: '5',
    INSTANT_DATABASES: 'off',
  };

  log('registering the second data-plane server (the first comes from DATA_PLANE_URL)');
  cli(env, ['server:add', '--region', REGION, '--url', clusterUrls[1]]);

  const apis = apiPorts.map((port, i) =>
    startProcess(`api${i + 1}`, process.execPath, ['dist/src/main.js'], { ...env, PORT: String(port), WORKERS: 'off' }),
  );
  const workers = workerPorts.map((port, i) =>
    startProcess(`worker${i + 1}`, process.execPath, ['dist/src/worker.js'], { ...env, WORKER_PORT: String(port) }),
  );
  await Promise.all([
    ...apis.map((c, i) => waitReady(c, apiPorts[i])),
    ...workers.map((c, i) => waitReady(c, workerPorts[i])),
  ]);
  const servers = cli(env, ['server:list']).filter((s) => s.region === REGION);
  if (servers.length !== 2) throw new Error(`expected 2 servers in ${REGION}, found ${servers.length}`);
  log('api and workers ready; servers', servers.map((s) => s.publicHost).join(', '));

  fs.writeFileSync(path.join(tmp, 'nginx.conf'), nginxConfig(nginxPort, apiPorts));
  const nginx = startProcess('nginx', 'nginx', ['-c', path.join(tmp, 'nginx.conf'), '-p', tmp, '-g', 'daemon off;'], {
    PATH: process.env.PATH,
  });
  base = `http://127.0.0.1:${nginxPort}`;
  await waitReady(nginx, nginxPort, 15_000);

  const email = `owner-${run}@drill.test`;
  cli(env, ['developer:create', '--email', email, '--password', '-'], crypto.randomBytes(12).toString('hex'));
  token = cli(env, ['token:issue', '--email', email]).access_token;
  const ws = await request('POST', '/workspaces', { name: `Drill ${run}` });
  if (ws.status !== 201) throw new Error(`workspace create answered ${ws.status} ${JSON.stringify(ws.json)}`);
  const slug = ws.json.slug;
  log(`workspace ${slug}; load through nginx on ${nginxPort} for ${SECONDS}s, kill at ${KILL_AT}s`);

  // ---- load ----
  const created = new Map(); // name -> { id, status }
  const invites = new Set();
  const credentialCount = new Map(); // database name -> credentials the client made
  const busyCredential = new Set();
  let seq = 0;
  const dbPath = (n) => `/workspaces/${slug}/databases/${n}`;

  async function createDatabase() {
    const name = `d_${run}_${++seq}`;
    const p = `/workspaces/${slug}/databases`;
    const res = await op(
      'createDatabase',
      async () => ({ method: 'POST', path: p, res: await request('POST', p, { databaseName: name, region: REGION }) }),
      [201],
      async () => {
        const got = await request('GET', dbPath(name));
        return got.status === 200 ? got : undefined;
      },
    );
    if (res) created.set(name, { id: res.json.id, status: res.json.status });
  }

  async function createCredential() {
    const ready = [...created.entries()].filter(([n, d]) => d.status === 'READY' && !busyCredential.has(n));
    if (!ready.length) return readDatabase();
    const [name] = ready[Math.floor(Math.random() * ready.length)];
    busyCredential.add(name);
    try {
      const p = `${dbPath(name)}/credentials`;
      const res = await op(
        'createCredential',
        async () => ({ method: 'POST', path: p, res: await request('POST', p) }),
        [200],
        async () => {
          // Credential creates of one database are serialized here, so one more than counted means it took.
          const got = await request('GET', p);
          return got.status === 200 && got.json.length > (credentialCount.get(name) || 0) ? got : undefined;
        },
      );
      if (res) credentialCount.set(name, (credentialCount.get(name) || 0) + 1);
    } finally {
      busyCredential.delete(name);
    }
  }

  async function readDatabase() {
    const names = [...created.keys()];
    if (!names.length) return readMe();
    const name = names[Math.floor(Math.random() * names.length)];
    const d = created.get(name);
    const p = Math.random() < 0.5 ? `/databases/${d.id}` : dbPath(name);
    const res = await op('readDatabase', async () => ({ method: 'GET', path: p, res: await request('GET', p) }), [200]);
    if (res) d.status = res.json.status;
  }

  async function readMe() {
    await op(
      'readMe',
      async () => ({ method: 'GET', path: '/developers/me', res: await request('GET', '/developers/me') }),
      [200],
    );
  }

  async function invite() {
    const to = `invitee-${run}-${++seq}@drill.test`;
    const p = `/workspaces/${slug}/invites`;
    const res = await op(
      'invite',
      async () => ({ method: 'POST', path: p, res: await request('POST', p, { email: to }) }),
      [201],
      async () => {
        const got = await request('GET', p);
        return got.status === 200 && got.json.some((i) => i.email?.toLowerCase() === to) ? got : undefined;
      },
    );
    if (res) invites.add(to);
  }

  const mix = [
    [createDatabase, 0.2],
    [createCredential, 0.2],
    [readDatabase, 0.3],
    [readMe, 0.15],
    [invite, 0.15],
  ];
  const pick = () => {
    let x = Math.random();
    for (const [fn, w] of mix) if ((x -= w) < 0) return fn;
    return readMe;
  };

  const loadEnd = Date.now() + SECONDS * 1000;
  let killed;
  const killer = sleep(KILL_AT * 1000).then(() => {
    killed = { at: Number(elapsed()), api: apis[0].name, worker: workers[0].name };
    log(`SIGKILL ${apis[0].name} (pid ${apis[0].proc.pid}) and ${workers[0].name} (pid ${workers[0].proc.pid})`);
    apis[0].proc.kill('SIGKILL');
    workers[0].proc.kill('SIGKILL');
  });
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (Date.now() < loadEnd && stats.requests < MAX_REQUESTS) {
        await pick()();
        await sleep(50 + Math.random() * 100);
      }
    }),
  );
  await killer;
  log(`load done: ${stats.requests} requests, ${created.size} databases, ${invites.size} invites`);

  // ---- settle ----
  const meta = withDatabase(ADMIN_URL, metaDb);
  const settleEnd = Date.now() + SETTLE_SECONDS * 1000;
  const settleStart = Date.now();
  let lastProgress = settleStart;
  let rows = [];
  for (;;) {
    rows = await sql(
      meta,
      `SELECT d.name, d.status, d.physical_name, s.public_host
         FROM databases d LEFT JOIN data_plane_servers s ON s.id = d.server_id
         JOIN workspaces w ON w.id = d.workspace_id WHERE w.slug = $1`,
      [slug],
    );
    const notReady = [...created.keys()].filter((n) => !rows.some((r) => r.name === n && r.status === 'READY'));
    const noMail = [...invites].filter((to) => !mail.byRecipient.has(to));
    const allReady = notReady.length === 0;
    const allMail = noMail.length === 0;
    if (Date.now() - lastProgress >= 10_000) {
      lastProgress = Date.now();
      log(`settling: ${notReady.length} databases not READY, ${noMail.length} invites without their e-mail`);
    }
    if ((allReady && allMail && Date.now() - mail.lastAt > 3000) || Date.now() > settleEnd) break;
    await sleep(1000);
  }
  const settleSeconds = Number(((Date.now() - settleStart) / 1000).toFixed(1));
  // A few more seconds for a duplicate e-mail to show up, if one were coming.
  await sleep(3000);
  log('settled');

  // ---- checks ----
  const byName = new Map();
  for (const r of rows) byName.set(r.name, [...(byName.get(r.name) || []), r]);
  const onCluster = await Promise.all(
    clusterUrls.map(
      async (url) =>
        new Set(
          (await sql(url, 'SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [namePrefix])).map(
            (r) => r.datname,
          ),
        ),
    ),
  );
  const clusterHost = clusterUrls.map((u) => new URL(u).host);
  const databaseProblems = [];
  const perServer = Object.fromEntries(clusterHost.map((h) => [h, 0]));
  for (const name of created.keys()) {
    const rs = byName.get(name) || [];
    if (rs.length !== 1) {
      databaseProblems.push({ name, problem: `${rs.length} metadata rows` });
      continue;
    }
    const [r] = rs;
    if (r.status !== 'READY') databaseProblems.push({ name, problem: `status ${r.status}` });
    const where = clusterHost.filter((_, i) => onCluster[i].has(r.physical_name));
    if (where.length !== 1) databaseProblems.push({ name, problem: `physical database on ${where.length} clusters` });
    else if (where[0] !== r.public_host)
      databaseProblems.push({ name, problem: `on ${where[0]} but recorded on ${r.public_host}` });
    else perServer[where[0]]++;
  }
  // Credentials: as many live ones as the client made (a retry never duplicated one), each a role on its
  // database's server and on no other.
  const credRows = await sql(
    meta,
    `SELECT d.name, c.id, s.public_host FROM credentials c JOIN databases d ON d.id = c.database_id
       JOIN data_plane_servers s ON s.id = d.server_id JOIN workspaces w ON w.id = d.workspace_id
      WHERE w.slug = $1 AND NOT c.internal AND NOT c.pending AND c.dropped IS NULL`,
    [slug],
  );
  // Informational: intents a killed API left pending (the sweep abandons them after 2 minutes).
  const [{ pending: pendingIntents }] = await sql(
    meta,
    `SELECT count(*)::int AS pending FROM credentials c JOIN databases d ON d.id = c.database_id
       JOIN workspaces w ON w.id = d.workspace_id WHERE w.slug = $1 AND c.pending`,
    [slug],
  );
  const rolesOn = await Promise.all(
    clusterUrls.map(
      async (url) =>
        new Set(
          (
            await sql(url, 'SELECT rolname FROM pg_roles WHERE rolname = ANY($1::text[])', [credRows.map((r) => r.id)])
          ).map((r) => r.rolname),
        ),
    ),
  );
  const credentialProblems = [];
  const credsByDb = new Map();
  for (const r of credRows) {
    credsByDb.set(r.name, (credsByDb.get(r.name) || 0) + 1);
    const where = clusterHost.filter((_, i) => rolesOn[i].has(r.id));
    if (where.length !== 1 || where[0] !== r.public_host)
      credentialProblems.push({ database: r.name, credential: r.id, problem: `role on [${where.join(', ')}]` });
  }
  for (const name of new Set([...credsByDb.keys(), ...credentialCount.keys()])) {
    const want = credentialCount.get(name) || 0;
    const got = credsByDb.get(name) || 0;
    if (want !== got) credentialProblems.push({ database: name, problem: `client made ${want}, metadata has ${got}` });
  }
  const strayRows = rows.filter((r) => !created.has(r.name)).map((r) => ({ name: r.name, status: r.status }));
  const mailProblems = [...invites]
    .map((to) => ({ to, received: mail.byRecipient.get(to) || 0 }))
    .filter((m) => m.received !== 1);
  const unexpectedMail = [...mail.byRecipient.keys()].filter((to) => !invites.has(to));

  const checks = {
    everyDatabaseReadyOnceOnOneServer: databaseProblems.length === 0,
    noUnrequestedDatabases: strayRows.length === 0,
    everyCredentialOnceOnItsServer: credentialProblems.length === 0,
    everyInviteMailedOnce: mailProblems.length === 0 && unexpectedMail.length === 0,
    noFailureAfterRetry: stats.finalFailures.length === 0,
    // Only requests in flight on the killed API may fail (a 502 from nginx, within moments of the kill).
    rawFailuresOnlyAtTheKill: stats.rawFailures.every(
      (f) => killed && f.status === 502 && f.at >= killed.at && f.at <= killed.at + 5,
    ),
    bothServersGotDatabases: Object.values(perServer).every((n) => n > 0),
    killedProcessesDied: apis[0].exited && workers[0].exited,
    survivorsAlive: !apis[1].exited && !workers[1].exited,
  };
  const pass = Object.values(checks).every(Boolean);
  const summary = {
    result: pass ? 'PASS' : 'FAIL',
    seconds: Number(elapsed()),
    load: { seconds: SECONDS, concurrency: CONCURRENCY, requests: stats.requests, operations: stats.byOp },
    killed,
    settleSeconds,
    databases: { created: created.size, perServer, problems: databaseProblems, strayRows },
    credentials: {
      created: [...credentialCount.values()].reduce((a, b) => a + b, 0),
      problems: credentialProblems,
      pendingIntentsLeft: pendingIntents,
    },
    invites: { created: invites.size, emailsReceived: mail.total, problems: mailProblems, unexpectedMail },
    rawFailures: stats.rawFailures,
    retriesFoundAlreadyDone: stats.retriesFoundDone,
    finalFailures: stats.finalFailures,
    checks,
  };
  console.log(JSON.stringify(summary, null, 2));
  console.log(pass ? 'PASS' : 'FAIL');
  return pass;
}

// ---------- cleanup ----------
async function cleanCluster(url, credentialIds) {
  const c = new Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await c.connect();
    const dbs = await c.query('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [namePrefix]);
    for (const { datname } of dbs.rows) await c.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    // Credential roles: members of this run's owner roles, and any role named by one of its credentials.
    const roles = await c.query(
      `SELECT DISTINCT m.rolname FROM pg_auth_members am
         JOIN pg_roles o ON o.oid = am.roleid JOIN pg_roles m ON m.oid = am.member
        WHERE starts_with(o.rolname, $1)
       UNION SELECT rolname FROM pg_roles WHERE rolname = ANY($2::text[])`,
      [namePrefix, credentialIds],
    );
    const owners = await c.query('SELECT rolname FROM pg_roles WHERE starts_with(rolname, $1)', [namePrefix]);
    for (const { rolname } of [...roles.rows, ...owners.rows]) {
      await c
        .query(`DROP ROLE IF EXISTS "${rolname.replace(/"/g, '""')}"`)
        .catch((err) => log(`could not drop role ${rolname}`, err.message));
    }
  } catch (err) {
    log(`cleanup of ${new URL(url).host} failed`, err.message);
  } finally {
    await c.end().catch(() => {});
  }
}

async function cleanup() {
  for (const c of children) {
    if (!c.exited) c.proc.kill('SIGTERM');
  }
  const deadline = Date.now() + 10_000;
  while (children.some((c) => !c.exited) && Date.now() < deadline) await sleep(200);
  for (const c of children) if (!c.exited) c.proc.kill('SIGKILL');
  if (smtp) await new Promise((r) => smtp.server.close(r));

  let credentialIds = [];
  try {
    credentialIds = (await sql(withDatabase(ADMIN_URL, metaDb), 'SELECT id FROM credentials')).map((r) => r.id);
  } catch {
    /* the metadata database may not exist */
  }
  try {
    await sql(ADMIN_URL, `DROP DATABASE IF EXISTS "${metaDb}" WITH (FORCE)`);
  } catch (err) {
    log('could not drop the metadata database', err.message);
  }
  // Both clusters at once, one admin session each (DROP DATABASE waits for a checkpoint: ~0.5 s apiece).
  await Promise.all(clusterUrls.map((url) => cleanCluster(url, credentialIds)));
  try {
    const Redis = require('ioredis');
    const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${queuePrefix}:*`, 'COUNT', 500);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
    await redis.quit();
  } catch (err) {
    log('redis cleanup failed', err.message);
  }
  if (process.env.DRILL_KEEP_LOGS !== '1') fs.rmSync(tmp, { recursive: true, force: true });
  else log(`logs kept in ${tmp}`);
}

let cleaning;
function cleanupOnce() {
  cleaning ??= cleanup();
  return cleaning;
}
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    log(`${sig}: cleaning up`);
    cleanupOnce().finally(() => process.exit(1));
  });
}

main()
  .then(
    (pass) => pass,
    (err) => {
      log('drill error:', err.stack || err.message);
      console.log('FAIL');
      return false;
    },
  )
  .then(async (pass) => {
    await cleanupOnce();
    log(`done in ${elapsed()}s`);
    process.exit(pass ? 0 : 1);
  });
