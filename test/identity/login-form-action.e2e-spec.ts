import type TestAgent from 'supertest/lib/agent';
import { createTestApp, TestApp } from '../support/test-app';
import { readForm } from '../support/html-page';
import { authorizationRequest, createHuman, GENEROUS_LIMIT, Human } from './identity-support';

const REDIRECT = 'http://localhost:53683/callback';

describe('the login form posts back to the URL it was served from', () => {
  let t: TestApp;
  let human: Human;
  beforeAll(async () => {
    t = await createTestApp(GENEROUS_LIMIT);
    human = await createHuman(t.app, 'form-action');
  });
  afterAll(() => t.close());

  async function signInFrom(http: TestAgent, path: string) {
    const { params } = authorizationRequest('nilecli', REDIRECT);
    const pageUrl = new URL(`http://127.0.0.1${path}`);
    pageUrl.search = new URLSearchParams(params as unknown as Record<string, string>).toString();
    const page = await http.get(pageUrl.pathname + pageUrl.search).expect(200);
    const { target, fields } = readForm(page.text, pageUrl);
    expect(target.origin).toBe(pageUrl.origin);
    const res = await http
      .post(target.pathname + target.search)
      .type('form')
      .send({ ...fields, email: human.email, password: human.password })
      .redirects(0);
    return { res, target, params };
  }

  it.each(['/authorize', '/authorize/'])('signs in from %s', async (path) => {
    const { res, target, params } = await signInFrom(t.http, path);
    expect(target.pathname).toBe(path);
    expect({ status: res.status, text: res.status === 302 ? '' : res.text }).toEqual({ status: 302, text: '' });
    const location = new URL(res.headers.location);
    expect(location.searchParams.get('code')).toEqual(expect.any(String));
    expect(location.searchParams.get('state')).toBe(params.state);
  });

  it('stays under the path prefix a reverse proxy serves the page at', async () => {
    const { params } = authorizationRequest('nilecli', REDIRECT);
    const page = await t.http.get('/authorize').query(params).expect(200);
    for (const served of ['https://cp.example/prefix/authorize?a=1', 'https://cp.example/prefix/authorize/?a=1']) {
      const pageUrl = new URL(served);
      const { target } = readForm(page.text, pageUrl);
      expect(target.href).toBe(pageUrl.href);
    }
  });
});
