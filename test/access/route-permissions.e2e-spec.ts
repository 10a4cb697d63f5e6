import { buildOpenApiDocument } from '../../src/app.setup';
import { AccessTokens } from '../../src/auth/access-tokens';
import { SUPPORTED_SCOPES } from '../../src/auth/oauth/scopes';
import { createDeveloperWithToken, createTestApp, TestApp } from '../support/test-app';

/**
 * Generated from the router table, so a new route cannot be forgotten: every route that is not
 * on the public list answers 401 without a token, refuses a token without the scope the OpenAPI
 * document names for it, and every workspace route answers the same 403 to a non-member and for
 * an unknown slug.
 */
const PUBLIC_ROUTES = [
  /^GET \/health(\/live|\/ready|\/data-plane)?$/,
  /^(GET|POST) \/docs/,
  /^GET \/\.well-known\//,
  /^(GET|POST) \/authorize/,
  /^POST \/oauth2\/token$/,
  /^GET \/invites\/accept$/,
  /^POST \/invites\/join$/,
  /^POST \/databases\/provision$/,
];

interface Route {
  method: string;
  path: string;
}

function routesOf(t: TestApp): Route[] {
  const express = t.app.getHttpAdapter().getInstance() as unknown as {
    router: { stack: { route?: { path: string; methods: Record<string, boolean> } }[] };
  };
  return express.router.stack
    .filter((layer) => layer.route && typeof layer.route.path === 'string' && !layer.route.methods._all)
    .flatMap((layer) =>
      Object.keys(layer.route!.methods).map((m) => ({ method: m.toUpperCase(), path: layer.route!.path })),
    )
    .filter((r) => r.method !== 'HEAD' && r.path.startsWith('/') && !/[*{(]/.test(r.path));
}

function fill(path: string, slug: string): string {
  return path
    .replace(':workspaceSlug', slug)
    .replace(/:[A-Za-z]*Id\b/g, '00000000-0000-4000-8000-000000000000')
    .replace(/:[A-Za-z]+/g, 'some_name');
}

const send = (t: TestApp, route: Route, url: string) =>
  t.http[route.method.toLowerCase() as 'get' | 'post' | 'put' | 'delete' | 'patch'](url);

describe('route permissions (every route)', () => {
  let t: TestApp;
  let routes: Route[];
  let foreignSlug: string;
  let strangerAuth: { Authorization: string };
  beforeAll(async () => {
    t = await createTestApp();
    routes = routesOf(t);
    const owner = await createDeveloperWithToken(t.app);
    foreignSlug = (
      await t.http
        .post('/workspaces')
        .set(owner.auth)
        .send({ name: `Private ${Date.now()}` })
        .expect(201)
    ).body.slug;
    strangerAuth = (await createDeveloperWithToken(t.app)).auth;
  });
  afterAll(() => t.close());

  it('finds the routes to check', () => {
    expect(routes.length).toBeGreaterThan(5);
    expect(routes.filter((r) => r.path.includes(':workspaceSlug')).length).toBeGreaterThan(2);
  });

  it('answers 401 without a token on every non-public route', async () => {
    const failures: string[] = [];
    for (const route of routes) {
      if (PUBLIC_ROUTES.some((p) => p.test(`${route.method} ${route.path}`))) continue;
      const res = await send(t, route, fill(route.path, foreignSlug)).send({});
      if (res.status !== 401 || res.body.errorCode !== 'invalid_credentials')
        failures.push(`${route.method} ${route.path} -> ${res.status}`);
    }
    expect(failures).toEqual([]);
  });

  it('documents every public route in the OpenAPI document as needing no token (security: [])', () => {
    const document = buildOpenApiDocument(t.app);
    const failures: string[] = [];
    for (const route of routes) {
      if (!PUBLIC_ROUTES.some((p) => p.test(`${route.method} ${route.path}`))) continue;
      const operation = document.paths[route.path.replace(/:([A-Za-z]+)/g, '{$1}')]?.[
        route.method.toLowerCase() as 'get'
      ] as { security?: unknown[] } | undefined;
      // Browser pages (login, join, the docs) are not in the document.
      if (operation && !(Array.isArray(operation.security) && operation.security.length === 0))
        failures.push(`${route.method} ${route.path}: security ${JSON.stringify(operation.security)}`);
    }
    expect(failures).toEqual([]);
  });

  it('refuses, on every non-public route, exactly the tokens without the scope its OpenAPI operation names', async () => {
    const document = buildOpenApiDocument(t.app);
    const { developer } = await createDeveloperWithToken(t.app);
    const tokens = SUPPORTED_SCOPES.map((scope) => ({
      scope,
      auth: { Authorization: `Bearer ${t.app.get(AccessTokens).issue({ sub: developer.id, scope }).access_token}` },
    }));
    const failures: string[] = [];
    for (const route of routes) {
      if (PUBLIC_ROUTES.some((p) => p.test(`${route.method} ${route.path}`))) continue;
      const operation = document.paths[route.path.replace(/:([A-Za-z]+)/g, '{$1}')]?.[
        route.method.toLowerCase() as 'get'
      ] as Record<string, unknown> | undefined;
      const needed = operation?.['x-required-scope'];
      if (needed !== 'workspaces' && needed !== 'databases') {
        failures.push(`${route.method} ${route.path}: documented scope ${String(needed)}`);
        continue;
      }
      // A member of no workspace, on another's workspace: a token that passes the scope check
      // meets the membership check (or validation), so nothing is changed either way.
      for (const { scope, auth } of tokens) {
        const res = await send(t, route, fill(route.path, foreignSlug)).set(auth).send({});
        const refused = res.status === 403 && res.body.errorCode === 'forbidden_operation';
        const challenge = res.headers['www-authenticate'];
        if (scope === needed && refused) failures.push(`${route.method} ${route.path}: refuses a ${scope} token`);
        if (scope !== needed && (!refused || challenge !== `Bearer error="insufficient_scope", scope="${needed}"`))
          failures.push(`${route.method} ${route.path}: ${scope} token -> ${res.status} ${challenge ?? ''}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('answers identical 403s to a non-member and for an unknown slug on every workspace route', async () => {
    const failures: string[] = [];
    for (const route of routes.filter((r) => r.path.includes(':workspaceSlug'))) {
      const foreign = await send(t, route, fill(route.path, foreignSlug)).set(strangerAuth).send({});
      const unknown = await send(t, route, fill(route.path, 'no-such-workspace-anywhere')).set(strangerAuth).send({});
      const expected = { errorCode: 'unauthorized_workspace_access', message: expect.any(String), statusCode: 403 };
      try {
        expect(foreign.status).toBe(403);
        expect(foreign.body).toEqual(expected);
        expect(unknown.status).toBe(403);
        expect(unknown.body).toEqual(foreign.body);
      } catch {
        failures.push(`${route.method} ${route.path} -> ${foreign.status}/${unknown.status}`);
      }
    }
    expect(failures).toEqual([]);
  });
});
