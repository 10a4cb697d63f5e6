#!/usr/bin/env node
/**
 * `npm run bench`: speed and memory targets of the hot paths, measured against the built app
 * (dist/) on this machine with real PostgreSQL and Redis. Each request path gets a fixed number of
 * requests from autocannon over 10 connections; the run fails when a target is missed.
 *
 * Targets (2 cores, 24 GiB):
 *   - authenticated reads (JWT verify + developer lookup [+ membership guard]): p99 <= 50 ms, >= 400 req/s
 *   - /health: p99 <= 50 ms
 *   - JWT verification with the prebuilt KeyObject: >= 2x faster than re-parsing the PEM
 *   - resident memory after the run: <= 400 MiB
 */
require('reflect-metadata');
const { execFileSync } = require('node:child_process');
const { createPublicKey } = require('node:crypto');
const { mkdirSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const autocannon = require('autocannon');
const { Client } = require('pg');

const root = join(__dirname, '..');
const runId = Date.now().toString(36);
const adminUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dbUrl = adminUrl.replace(/\/[^/]*$/, `/cp_bench_${runId}`);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4000);

function dataPlaneUrl() {
  if (process.env.DATA_PLANE_URL) return process.env.DATA_PLANE_URL;
  return execFileSync('bash', [join(root, 'scripts/dataplane-cluster.sh')]).toString().trim().split('\n').pop();
}

function fire(url, headers) {
  return new Promise((resolve, reject) => {
    autocannon({ url, connections: 10, amount: REQUESTS, headers }, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

function jwtVerifyComparison(token, keys) {
  const { verify } = require('jsonwebtoken');
  const pem = keys.publicKey.export({ type: 'spki', format: 'pem' });
  const time = (key) => {
    const n = 2000;
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) verify(token, key, { algorithms: ['RS256'], ignoreExpiration: false, audience: undefined });
    return Number(process.hrtime.bigint() - start) / 1e6 / n;
  };
  time(keys.publicKey); // warm up
  const keyObjectMs = time(keys.publicKey);
  const pemMs = time(pem);
  return { keyObjectMs, pemMs, speedup: pemMs / keyObjectMs, sanity: createPublicKey(pem).type };
}

async function main() {
  execFileSync('npx', ['nest', 'build'], { cwd: root, stdio: 'inherit' });
  Object.assign(process.env, {
    DATABASE_URL: dbUrl,
    DATA_PLANE_URL: dataPlaneUrl(),
    LOG_LEVEL: 'silent',
    QUEUE_PREFIX: `bench-${runId}`,
    SECRETS_FILE: join(root, '.secrets', `bench-${runId}.json`),
    DATA_PLANE_NAME_PREFIX: `b${runId}_`,
    RATE_LIMIT_AUTH_PER_MINUTE: '100000',
  });
  const { migrateDatabase } = require(join(root, 'dist/src/database/data-source-options'));
  const { NestFactory } = require('@nestjs/core');
  const { AppModule } = require(join(root, 'dist/src/app.module'));
  const { configureApp } = require(join(root, 'dist/src/app.setup'));
  const { AccessTokens } = require(join(root, 'dist/src/auth/access-tokens'));
  const { SigningKeys } = require(join(root, 'dist/src/auth/signing-keys'));
  const { DataSource } = require('typeorm');

  await migrateDatabase(dbUrl);
  const app = await NestFactory.create(AppModule, { logger: false, bodyParser: false });
  configureApp(app);
  await app.listen(0, '127.0.0.1');
  const base = await app.getUrl();
  const results = {};
  const failures = [];
  try {
    const ds = app.get(DataSource);
    const [dev] = await ds.query(`INSERT INTO developers (email, kind) VALUES ('bench-${runId}@example.test', 'HUMAN') RETURNING id`);
    const token = app.get(AccessTokens).issue({ sub: dev.id, scope: '' }).access_token;
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const ws = await fetch(`${base}/workspaces`, { method: 'POST', headers: auth, body: JSON.stringify({ name: `Bench ${runId}` }) }).then((r) => r.json());

    const paths = {
      'GET /health': [`${base}/health`, {}],
      'GET /developers/me': [`${base}/developers/me`, auth],
      'GET /workspaces/{slug}': [`${base}/workspaces/${ws.slug}`, auth],
      'GET /workspaces/{slug}/databases': [`${base}/workspaces/${ws.slug}/databases`, auth],
    };
    for (const [name, [url, headers]] of Object.entries(paths)) {
      await fire(url, headers); // warm-up pass
      const r = await fire(url, headers);
      results[name] = { reqPerSec: Math.round(r.requests.average), p50ms: r.latency.p50, p99ms: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
      if (r.non2xx || r.errors) failures.push(`${name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      if (r.latency.p99 > 50) failures.push(`${name}: p99 ${r.latency.p99} ms > 50 ms`);
      if (name !== 'GET /health' && r.requests.average < 400) failures.push(`${name}: ${Math.round(r.requests.average)} req/s < 400`);
    }
    results.jwtVerify = jwtVerifyComparison(token, app.get(SigningKeys));
    if (results.jwtVerify.speedup < 2) failures.push(`JWT verify with KeyObject only ${results.jwtVerify.speedup.toFixed(2)}x faster than PEM`);
    results.rssMiB = Math.round(process.memoryUsage().rss / 1024 / 1024);
    if (results.rssMiB > 400) failures.push(`RSS ${results.rssMiB} MiB > 400 MiB`);
  } finally {
    await app.close();
    const admin = new Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS cp_bench_${runId} WITH (FORCE)`);
    await admin.end();
  }
  console.table(Object.fromEntries(Object.entries(results).filter(([k]) => k.startsWith('GET'))));
  console.log('JWT verify per call (ms):', results.jwtVerify, '\nRSS after run (MiB):', results.rssMiB);
  mkdirSync(join(root, 'bench/results'), { recursive: true });
  writeFileSync(join(root, 'bench/results/latest.json'), JSON.stringify({ at: new Date().toISOString(), requests: REQUESTS, results, failures }, null, 2));
  if (failures.length) {
    console.error(`\nTargets missed:\n- ${failures.join('\n- ')}`);
    process.exit(1);
  }
  console.log('\nAll targets met.');
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
