import { createDeveloperWithToken, createTestApp, TestApp } from '../support/test-app';

/**
 * Generated from the router table, so a new route cannot be forgotten: every route that is not
 * on the public list answers 401 without a token, and every workspace route answers the same 403
 * to a non-member and for an unknown slug.
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
