import type { INestApplication } from '@nestjs/common';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { freePort } from '../support/free-port';
import { join } from 'node:path';
import type { Test } from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { OAuthClientsService, RegisteredClient } from '../../src/auth/oauth/oauth-clients.service';
import { DeveloperKind } from '../../src/developers/developer.entity';
import { DevelopersService } from '../../src/developers/developers.service';
import { createTestApp, TestApp, uniqueEmail } from '../support/test-app';

/** Identity specs make many attempts per client; the rate-limit spec sets its own low limit. */
export const GENEROUS_LIMIT = { RATE_LIMIT_AUTH_PER_MINUTE: '100000' };

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export interface Human {
  id: string;
  email: string;
  password: string;
}

export async function createHuman(app: INestApplication, label = 'human'): Promise<Human> {
  const password = `pw-${randomBytes(9).toString('base64url')}`;
  const created = await app
    .get(DevelopersService)
    .create({ email: uniqueEmail(label), kind: DeveloperKind.Human, password });
  return { id: created.id, email: created.email, password };
}

export async function createApiDeveloper(app: INestApplication) {
  return app.get(OAuthClientsService).createApiDeveloper(uniqueEmail('api'));
}

export function createClient(
  app: INestApplication,
  options: { redirectUris: string[]; isPublic?: boolean },
): Promise<RegisteredClient> {
  return app.get(OAuthClientsService).create({
    clientId: `client-${randomBytes(5).toString('hex')}`,
    redirectUris: options.redirectUris,
    isPublic: options.isPublic ?? false,
  });
}

export interface AuthorizationRequest {
  client_id: string;
  redirect_uri: string;
  response_type?: string;
  state?: string;
  scope?: string;
  code_challenge?: string;
  code_challenge_method?: string;
}

/** A complete authorization request for `client_id`, with a fresh PKCE pair and state. */
export function authorizationRequest(clientId: string, redirectUri: string) {
  const { verifier, challenge } = pkce();
  const params: AuthorizationRequest = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    state: randomBytes(8).toString('hex'),
    code_challenge: challenge,
    code_challenge_method: 'S256',
  };
  return { params, verifier };
}

/** Submits the login form as a browser would and returns the response (302 on success). */
export function submitLogin(http: TestAgent, params: AuthorizationRequest, email: string, password: string): Test {
  return http
    .post('/authorize')
    .type('form')
    .send({ ...params, email, password })
    .redirects(0);
}

/** Logs in and returns the code from the redirect (asserting it carries the state back). */
export async function obtainCode(http: TestAgent, params: AuthorizationRequest, human: Human): Promise<string> {
  const res = await submitLogin(http, params, human.email, human.password);
  if (res.status !== 302) throw new Error(`login answered ${res.status}: ${res.text}`);
  const location = new URL(res.headers.location);
  if (params.state !== undefined && location.searchParams.get('state') !== params.state) {
    throw new Error(`state not returned: ${res.headers.location}`);
  }
  const code = location.searchParams.get('code');
  if (!code) throw new Error(`no code in ${res.headers.location}`);
  return code;
}

export function tokenRequest(
  http: TestAgent,
  form: Record<string, string>,
  basic?: { id: string; secret: string },
): Test {
  const req = http.post('/oauth2/token').type('form');
  if (basic) {
    const encode = (s: string) => encodeURIComponent(s);
    req.set('Authorization', `Basic ${Buffer.from(`${encode(basic.id)}:${encode(basic.secret)}`).toString('base64')}`);
  }
  return req.send(form);
}

/** Redeems a code for nilecli-style public clients (PKCE, client_id in the form). */
export function redeemCode(http: TestAgent, params: AuthorizationRequest, code: string, verifier: string): Test {
  return tokenRequest(http, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: params.redirect_uri,
    client_id: params.client_id,
    code_verifier: verifier,
  });
}

/**
 * The whole app listening on a real port, its public URL being that address. Only PUBLIC_URL is
 * set: the issuer follows it, as a standard client's discovery requires.
 */
export async function listeningApp(env: Record<string, string> = {}): Promise<TestApp & { baseUrl: string }> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const t = await createTestApp({ PUBLIC_URL: baseUrl, ...GENEROUS_LIMIT, ...env });
  await t.app.listen(port, '127.0.0.1');
  return { ...t, baseUrl };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The JSON object of the last line of standard output, when there is one. */
  json?: Record<string, unknown>;
}

/** Runs the built operator CLI (`node dist/src/cli.js`) against this test run's database; `input` is its standard input. */
export function runCli(args: string[], env: Record<string, string> = {}, input?: string): Promise<CliResult> {
  const root = join(__dirname, '..', '..');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'dist/src/cli.js'), ...args], {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdin.end(input ?? '');
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const guard = setTimeout(() => child.kill('SIGKILL'), 30000);
    child.on('error', reject);
    // 'close', not 'exit': only then has everything the child wrote been read.
    child.on('close', (code) => {
      clearTimeout(guard);
      const last = stdout.trimEnd().split('\n').pop() ?? '';
      let json: Record<string, unknown> | undefined;
      try {
        json = JSON.parse(last) as Record<string, unknown>;
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr, json });
    });
  });
}
