#!/usr/bin/env node
/**
 * Baseline of the two hot reads: raw Express 5 + pg, no logging, no helmet, no framework. It does
 * what the service does for the same request and nothing else:
 *   - the same RS256 bearer token, verified by jsonwebtoken (what passport-jwt calls) against a
 *     prebuilt KeyObject, with the same issuer, audience and expiry checks;
 *   - the three statements the issue names, as the service sends them or sent them: the developer
 *     lookup, the membership check, the database read (the service now reads the developer and the
 *     membership in one statement, which is part of what is measured); for /developers/me the
 *     developer, their workspaces and the database ids, the service's own SQL;
 *   - a pg pool of the same size (DATABASE_POOL_SIZE);
 *   - a byte-identical JSON body (the bench compares them before it measures).
 * Constant parts (the data plane's public host) are computed once, as a hand-written app would.
 *
 * Environment: DATABASE_URL, DATABASE_POOL_SIZE, JWT_PUBLIC_KEY (PEM), JWT_ISSUER, JWT_AUDIENCE,
 * PUBLIC_URL, DATA_PLANE_PUBLIC_HOST (host:port). Prints `listening <port>` when ready.
 */
const { createPublicKey } = require('node:crypto');
const express = require('express');
const { verify } = require('jsonwebtoken');
const { Pool } = require('pg');

const env = process.env;
const publicKey = createPublicKey(env.JWT_PUBLIC_KEY);
const verifyOptions = {
  algorithms: ['RS256'],
  issuer: env.JWT_ISSUER,
  audience: env.JWT_AUDIENCE,
  ignoreExpiration: false,
};
const publicUrl = env.PUBLIC_URL.replace(/\/+$/, '');
const dbHostPrefix = `postgres://${env.DATA_PLANE_PUBLIC_HOST}/`;
const poolSize = Number(env.DATABASE_POOL_SIZE ?? 4);
const pool = new Pool({
  connectionString: env.DATABASE_URL,
  max: poolSize,
  min: poolSize, // kept through idle spells, as the service's pool is
  connectionTimeoutMillis: 5000,
});

const DEVELOPER_BY_ID = 'SELECT id, email, kind FROM developers WHERE id = $1 AND deleted IS NULL';
const WORKSPACE_FOR_MEMBER = `SELECT w.id, w.name, w.slug, w.billing_customer_id, w.created
         FROM workspaces w JOIN workspace_members m ON m.workspace_id = w.id AND m.developer_id = $1
        WHERE w.slug = $2`;
const DATABASE_BY_NAME = `SELECT id, workspace_id, name, region, sharded, server_id, status, physical_name, last_error,
       provision_attempts, deleted, deletion_due_at, finalized, created, updated FROM databases
            WHERE workspace_id = $1 AND name = $2 AND finalized IS NULL
            ORDER BY deleted DESC NULLS FIRST LIMIT 1`;
const WORKSPACES_OF = `SELECT m.developer_id AS member_id, w.id, w.name, w.slug, w.billing_customer_id, w.created
         FROM workspace_members m JOIN workspaces w ON w.id = m.workspace_id
        WHERE m.developer_id = ANY($1::uuid[])
        ORDER BY w.created ASC, w.id ASC`;
const DATABASE_IDS_OF = `SELECT id, workspace_id FROM databases
        WHERE workspace_id = ANY($1::uuid[]) AND deleted IS NULL
        ORDER BY created ASC, id ASC`;

function fail(res, statusCode, errorCode, message) {
  res.status(statusCode).json({ errorCode, message, statusCode });
}

/** The bearer token's developer, as the JWT strategy loads it; null answers 401. */
async function authenticate(req) {
  const match = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '');
  if (!match) return null;
  let payload;
  try {
    payload = verify(match[1], publicKey, verifyOptions);
  } catch {
    return null;
  }
  const { rows } = await pool.query(DEVELOPER_BY_ID, [payload.sub]);
  return rows[0] ?? null;
}

const workspaceJson = (w) => ({
  id: w.id,
  name: w.name,
  slug: w.slug,
  billing_customer_id: w.billing_customer_id ?? undefined,
  created: w.created,
});

const app = express();
app.disable('x-powered-by');
app.disable('etag');

app.get('/workspaces/:workspaceSlug/databases/:databaseName', async (req, res) => {
  const developer = await authenticate(req);
  if (!developer) return fail(res, 401, 'invalid_credentials', 'Missing, invalid or expired bearer token');
  const ws = (await pool.query(WORKSPACE_FOR_MEMBER, [developer.id, req.params.workspaceSlug.toLowerCase()])).rows[0];
  if (!ws) return fail(res, 403, 'unauthorized_workspace_access', 'You do not have access to this workspace');
  const d = (await pool.query(DATABASE_BY_NAME, [ws.id, req.params.databaseName])).rows[0];
  if (!d) return fail(res, 404, 'entity_not_found', `No database named ${req.params.databaseName}`);
  res.json({
    id: d.id,
    name: d.name,
    workspace: workspaceJson(ws),
    status: d.status,
    region: d.region,
    expandable: false,
    sharded: d.sharded,
    created: d.created,
    deleted: d.deleted ?? undefined,
    apiHost: `${publicUrl}/databases/${d.id}`,
    dbHost: d.status === 'READY' && !d.finalized && d.server_id ? dbHostPrefix + d.physical_name : undefined,
  });
});

app.get('/developers/me', async (req, res) => {
  const dev = await authenticate(req);
  if (!dev) return fail(res, 401, 'invalid_credentials', 'Missing, invalid or expired bearer token');
  const workspaces = (await pool.query(WORKSPACES_OF, [[dev.id]])).rows;
  const ids = [...new Set(workspaces.map((w) => w.id))];
  const byWorkspace = new Map(ids.map((id) => [id, []]));
  if (ids.length) {
    for (const row of (await pool.query(DATABASE_IDS_OF, [ids])).rows) {
      byWorkspace.get(row.workspace_id)?.push(row.id);
    }
  }
  res.json({
    id: dev.id,
    email: dev.email,
    kind: dev.kind,
    workspaces: workspaces.map(workspaceJson),
    databases: workspaces.flatMap((w) => byWorkspace.get(w.id) ?? []),
  });
});

app.use((err, _req, res, _next) => fail(res, 500, 'internal_error', err.message));

const server = app.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
process.on('SIGTERM', () => process.exit(0));
