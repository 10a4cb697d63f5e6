import type TestAgent from 'supertest/lib/agent';
import { createTestApp, TestApp } from '../support/test-app';
import { authorizationRequest, createHuman, GENEROUS_LIMIT, Human } from './identity-support';

const REDIRECT = 'http://localhost:53683/callback';

const unescape = (s: string) =>
  s.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]!);

/** What a browser does with the login page: the form's target (resolved against the page's URL) and its hidden fields. */
function readForm(html: string, pageUrl: URL): { target: URL; fields: Record<string, string> } {
  const form = /<form\b([^>]*)>/.exec(html);
  if (!form) throw new Error('no form on the page');
  const action = /\saction="([^"]*)"/.exec(form[1]);
  // No action attribute, or an empty one: the form posts to the document's URL.
  const target = new URL(unescape(action?.[1] ?? ''), pageUrl);
  const fields: Record<string, string> = {};
  for (const [, name, value] of html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)) {
    fields[unescape(name)] = unescape(value);
  }
  return { target, fields };
}

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
