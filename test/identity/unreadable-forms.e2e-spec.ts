import { escapeHtml } from '../../src/common/http/html';
import { expectRefusalPage } from '../support/html-page';
import { createTestApp, TestApp } from '../support/test-app';
import { authorizationRequest, createApiDeveloper, GENEROUS_LIMIT, tokenRequest } from './identity-support';

const FORM = 'application/x-www-form-urlencoded';
const LIMIT_BYTES = 2048;

/** Each way the form parser (FormBody) refuses a body, with the status and message it answers. */
const UNREADABLE: { label: string; headers: Record<string, string>; body: string; status: number; message: string }[] =
  [
    {
      label: 'a charset it does not read',
      headers: { 'Content-Type': `${FORM}; charset=latin1` },
      body: 'a=b',
      status: 415,
      message: 'unsupported charset "LATIN1"',
    },
    {
      label: 'a body that does not inflate as its Content-Encoding says',
      headers: { 'Content-Type': FORM, 'Content-Encoding': 'gzip' },
      body: 'a=b',
      status: 400,
      message: 'The request body could not be decoded as its Content-Encoding (gzip) says',
    },
    {
      label: 'an unknown Content-Encoding',
      headers: { 'Content-Type': FORM, 'Content-Encoding': 'no-such-coding' },
      body: 'a=b',
      status: 415,
      message: 'unsupported content encoding "no-such-coding"',
    },
    {
      label: 'a body over BODY_LIMIT_BYTES',
      headers: { 'Content-Type': FORM },
      body: `a=${'x'.repeat(LIMIT_BYTES * 2)}`,
      status: 413,
      message: 'Request body is too large',
    },
  ];

describe('forms the form parser cannot read are answered by their route', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ ...GENEROUS_LIMIT, BODY_LIMIT_BYTES: String(LIMIT_BYTES) });
  });
  afterAll(() => t.close());

  const send = (path: string, c: (typeof UNREADABLE)[number]) => t.http.post(path).set(c.headers).send(c.body);

  it.each(UNREADABLE)('token endpoint: $label is an RFC 6749 error, with its status, never cached', async (c) => {
    const res = await send('/oauth2/token', c);
    expect({ status: res.status, body: res.body }).toEqual({
      status: c.status,
      body: {
        errorCode: 'bad_request',
        message: c.message,
        statusCode: c.status,
        error: 'invalid_request',
        error_description: c.message,
      },
    });
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
  });

  it.each(UNREADABLE)('login form: $label is a page', async (c) => {
    expectRefusalPage(await send('/authorize', c), c.status, escapeHtml(c.message));
  });

  it.each(UNREADABLE)('invite join form: $label is a page', async (c) => {
    expectRefusalPage(await send('/invites/join', c), c.status, escapeHtml(c.message));
  });

  describe('a malformed body sent as JSON, which these routes do not read', () => {
    const json = (path: string) =>
      t.http.post(path).set('Content-Type', 'application/json').send('{"grant_type": "authorization_code",');

    it('token endpoint: the RFC 6749 error that it takes forms, never cached', async () => {
      for (const path of ['/oauth2/token', '/OAuth2/Token/']) {
        const res = await json(path);
        expect({ status: res.status, error: res.body.error, message: res.body.message }).toEqual({
          status: 400,
          error: 'invalid_request',
          message: 'The body must be application/x-www-form-urlencoded',
        });
        expect(res.headers['cache-control']).toBe('no-store');
      }
    });

    it('login and join forms: a page, not the JSON parser’s error', async () => {
      for (const path of ['/authorize', '/invites/join']) {
        const res = await json(path);
        expect({ path, status: res.status, type: res.headers['content-type'] }).toEqual({
          path,
          status: 400,
          type: expect.stringMatching(/^text\/html/),
        });
      }
    });
  });
});

describe('the token endpoint’s other refusals', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_AUTH_PER_MINUTE: '1' });
  });
  afterAll(() => t.close());

  it('does not count an unreadable form as an attempt, and keeps a 429’s body while never caching it', async () => {
    const api = await createApiDeveloper(t.app);
    const form = { grant_type: 'client_credentials', client_id: api.clientId, client_secret: api.clientSecret };
    for (let i = 0; i < 3; i++) {
      const unreadable = await t.http
        .post('/oauth2/token')
        .set('Content-Type', `${FORM}; charset=latin1`)
        .send(new URLSearchParams(form).toString());
      expect(unreadable.status).toBe(415);
    }
    await tokenRequest(t.http, form).expect(200);
    const throttled = await tokenRequest(t.http, form);
    expect(throttled.status).toBe(429);
    // RFC 6749 defines no error for a 429: the service's body only.
    expect(throttled.body).toEqual({ errorCode: 'threshold_exceeded', message: expect.any(String), statusCode: 429 });
    expect(throttled.headers['retry-after']).toEqual(expect.any(String));
    expect(throttled.headers['cache-control']).toBe('no-store');
    expect(throttled.headers.pragma).toBe('no-cache');
  });

  it('refuses a bad request on the login form as before (a page) once the form is read', async () => {
    const { params } = authorizationRequest('nilecli', 'http://localhost:1/callback');
    const res = await t.http
      .post('/authorize')
      .type('form')
      .send({ ...params, client_id: 'no-such-client' });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
  });
});
