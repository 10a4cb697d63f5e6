import { MAX_JSON_DEPTH } from '../../src/common/http/json-shape';
import { createReadyDatabase, createWorkspace } from '../databases/support';
import { createDeveloperWithToken, createTestApp, TestApp } from '../support/test-app';

const deepObject = (levels: number) => `{"name":${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}}`;
const deepArray = (levels: number) => `{"name":${'['.repeat(levels)}${']'.repeat(levels)}}`;
const tooDeep = `The request nests objects or arrays deeper than ${MAX_JSON_DEPTH} levels`;

/**
 * Bodies that recursive code (class-transformer, class-validator) cannot walk, and keys that
 * class-transformer drops silently, are refused at the edge with a 400 like any bad input.
 */
describe('hostile JSON bodies', () => {
  let t: TestApp;
  let auth: { Authorization: string };
  let routes: [method: 'post' | 'put', path: string][];
  let slug: string;
  let dbName: string;

  beforeAll(async () => {
    t = await createTestApp({ DATABASE_POOL_TARGET: '0' });
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
    dbName = (await createReadyDatabase(t, auth, slug)).name;
    routes = [
      ['post', '/workspaces'],
      ['post', `/workspaces/${slug}/databases`],
      ['put', `/workspaces/${slug}/databases/${dbName}`],
      ['post', `/workspaces/${slug}/databases/${dbName}/credentials/rotate`],
      ['post', `/workspaces/${slug}/databases/${dbName}/compute`],
      ['post', `/workspaces/${slug}/invites`],
      ['post', `/workspaces/${slug}/subscription`],
      ['put', `/workspaces/${slug}/subscription`],
      ['post', '/invites/accept'],
    ];
  });
  afterAll(() => t.close());

  it('answers 3,000 levels of nested objects and 5,000 of nested arrays with 400 naming the limit, on every route with a body', async () => {
    for (const [method, path] of routes) {
      for (const body of [deepObject(3000), deepArray(5000)]) {
        const res = await t.http[method](path).set(auth).set('Content-Type', 'application/json').send(body);
        expect({ method, path, status: res.status, body: res.body }).toEqual({
          method,
          path,
          status: 400,
          body: { errorCode: 'bad_request', message: tooDeep, statusCode: 400 },
        });
      }
    }
  });

  it(`accepts nesting up to ${MAX_JSON_DEPTH} levels (and then validates the fields as usual)`, async () => {
    const res = await t.http
      .post('/workspaces')
      .set(auth)
      .set('Content-Type', 'application/json')
      .send(deepObject(MAX_JSON_DEPTH - 2));
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^name /);
  });

  it('refuses __proto__, constructor and prototype keys like any other unknown field, and changes nothing', async () => {
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      const subscription = await t.http
        .put(`/workspaces/${slug}/subscription`)
        .set(auth)
        .set('Content-Type', 'application/json')
        .send(`{"level":"PRO","${key}":{"polluted":true}}`);
      expect(subscription.status).toBe(400);
      expect(subscription.body).toEqual({
        errorCode: 'bad_request',
        message: `property ${key} should not exist`,
        statusCode: 400,
      });

      const rename = await t.http
        .put(`/workspaces/${slug}/databases/${dbName}`)
        .set(auth)
        .set('Content-Type', 'application/json')
        .send(`{"name":"renamed_${key.replace(/_/g, '')}","${key}":{}}`);
      expect(rename.status).toBe(400);
      expect(rename.body).toEqual({
        errorCode: 'bad_request',
        message: `property ${key} should not exist`,
        statusCode: 400,
      });
    }
    const current = await t.http.get(`/workspaces/${slug}/subscription`).set(auth).expect(200);
    expect(current.body.level).toBe('FREE');
    await t.http.get(`/workspaces/${slug}/databases/${dbName}`).set(auth).expect(200);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
