import { request } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { createReadyDatabase, createWorkspace, unique } from '../databases/support';
import { createDeveloperWithToken, createTestApp, TestApp } from '../support/test-app';

/** Sends `raw` as it is over a TCP connection and reads the answer until the server closes it. */
function rawRequest(
  port: number,
  raw: string,
): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(raw));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head, ...rest] = answer.split('\r\n\r\n');
      const [statusLine, ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
  });
}

describe('error bodies of the HTTP layer', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ BODY_LIMIT_BYTES: '2048' });
  });
  afterAll(() => t.close());

  it('answers an unknown route with 404 entity_not_found', async () => {
    const res = await t.http.get('/no/such/route').expect(404);
    expect(res.body).toEqual({
      errorCode: 'entity_not_found',
      message: 'No route for GET /no/such/route',
      statusCode: 404,
    });
  });

  it('answers a wrong method on a known path with 405 and Allow', async () => {
    const res = await t.http.delete('/health').expect(405);
    expect(res.body).toMatchObject({ errorCode: 'unsupported_operation', statusCode: 405 });
    expect(res.headers.allow).toBe('GET');
  });

  it('answers malformed JSON with 400 bad_request', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const res = await t.http
      .post('/workspaces')
      .set(auth)
      .set('Content-Type', 'application/json')
      .send('{"name": ')
      .expect(400);
    expect(res.body).toEqual({ errorCode: 'bad_request', message: 'Malformed JSON body', statusCode: 400 });
  });

  it('answers an oversized body with 413', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const res = await t.http
      .post('/workspaces')
      .set(auth)
      .send({ name: 'x'.repeat(5000) })
      .expect(413);
    expect(res.body).toEqual({ errorCode: 'bad_request', message: 'Request body is too large', statusCode: 413 });
  });

  it('answers a body failing validation with 400 naming the field', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const res = await t.http.post('/workspaces').set(auth).send({ name: '' }).expect(400);
    expect(res.body.errorCode).toBe('bad_request');
    expect(res.body.message).toMatch(/name/);
    const unknown = await t.http.post('/workspaces').set(auth).send({ name: 'ok', color: 'red' }).expect(400);
    expect(unknown.body.message).toMatch(/color/);
  });

  it('ignores the body of a GET, well-formed or not (it has no meaning there)', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    for (const body of ['{bad', '{"any": "thing"}']) {
      const res = await t.http.get('/workspaces').set(auth).set('Content-Type', 'application/json').send(body);
      expect(res.status).toBe(200);
      expect(res.body).toEqual([]);
    }
  });

  it('answers a body in a charset it does not read with 415 naming it, and a body its encoding does not decode with 400', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const charset = await t.http
      .post('/workspaces')
      .set(auth)
      .set('Content-Type', 'application/json; charset=latin1')
      .send('{"name": "x"}');
    expect(charset.status).toBe(415);
    expect(charset.body).toEqual({
      errorCode: 'bad_request',
      message: 'unsupported charset "LATIN1"',
      statusCode: 415,
    });
    const gzip = await t.http
      .post('/workspaces')
      .set(auth)
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'gzip')
      .send('{"name": "x"}');
    expect(gzip.status).toBe(400);
    expect(gzip.body).toEqual({
      errorCode: 'bad_request',
      message: 'The request body could not be decoded as its Content-Encoding (gzip) says',
      statusCode: 400,
    });
  });

  it('answers a body that is not JSON on a route that takes JSON with 415 naming what it got, and acts on nothing', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const { slug } = await createWorkspace(t, auth);
    const name = `form_${unique()}`;
    const cases: Array<[string | undefined, string]> = [
      ['application/x-www-form-urlencoded', `databaseName=${name}&region=AWS_US_WEST_2`],
      ['text/plain', JSON.stringify({ databaseName: name, region: 'AWS_US_WEST_2' })],
      [undefined, JSON.stringify({ databaseName: name, region: 'AWS_US_WEST_2' })],
    ];
    for (const [type, body] of cases) {
      const req = t.http.post(`/workspaces/${slug}/databases`).set(auth);
      // Without a type, the raw bytes go as they are and no Content-Type is sent.
      const res = type ? await req.type(type).send(body) : await req.unset('Content-Type').send(Buffer.from(body));
      expect(res.status).toBe(415);
      expect(res.body).toEqual({
        errorCode: 'bad_request',
        message: `The request body must be application/json; it was sent ${type ? `as ${type}` : 'with no Content-Type'}`,
        statusCode: 415,
      });
    }
    const listed = await t.http.get(`/workspaces/${slug}/databases`).set(auth).expect(200);
    expect(listed.body).toEqual([]);
    expect(await t.dataSource.query('SELECT 1 FROM databases WHERE name = $1', [name])).toEqual([]);
    const invite = await t.http.post(`/workspaces/${slug}/invites`).set(auth).type('form').send('email=a@example.com');
    expect(invite.status).toBe(415);
    // Authentication answers first: nothing about the route is told to a caller without a token.
    const anonymous = await t.http.post(`/workspaces/${slug}/invites`).type('form').send('email=a@example.com');
    expect(anonymous.status).toBe(401);
  });

  it('still reads a JSON body, takes a route without a body whatever is sent, and answers a missing body by validation', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const { slug } = await createWorkspace(t, auth);
    const missing = await t.http.post(`/workspaces/${slug}/databases`).set(auth);
    expect(missing.status).toBe(400);
    expect(missing.body.message).toMatch(/databaseName/);
    // So is an empty chunked body without a type, as a client writing an empty stream sends it.
    const server = t.app.getHttpServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const chunked = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(
          { port, host: '127.0.0.1', method: 'POST', path: `/workspaces/${slug}/databases` },
          (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (body += chunk));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.setHeader('Authorization', auth.Authorization);
        req.setHeader('Transfer-Encoding', 'chunked');
        req.end();
      });
      expect(chunked.status).toBe(400);
      expect(chunked.body).toMatch(/databaseName/);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    // The curl default type on a `*/*` route is still read as JSON.
    await t.http
      .post('/workspaces')
      .set(auth)
      .type('form')
      .send(JSON.stringify({ name: `Form ${unique()}` }))
      .expect(201);
    const database = await createReadyDatabase(t, auth, slug);
    await t.http
      .post(`/workspaces/${slug}/databases/${database.name}/credentials`)
      .set(auth)
      .type('text/plain')
      .send('anything')
      .expect(200);
  });

  it('refuses a body it cannot read (malformed JSON, a charset it does not read) only on a route that takes one: a route without one ignores it, and the route answers first', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const { slug } = await createWorkspace(t, auth);
    const database = await createReadyDatabase(t, auth, slug);
    const credentials = `/workspaces/${slug}/databases/${database.name}/credentials`;
    const unreadable: Array<[string, string]> = [
      ['application/json', '{'],
      ['application/json', 'null'],
      ['application/json; charset=latin1', '{}'],
    ];
    for (const [type, body] of unreadable) {
      // Routes without a body: the credential create and delete do their work.
      const created = await t.http.post(credentials).set(auth).type(type).send(body);
      expect({ type, body, status: created.status }).toEqual({ type, body, status: 200 });
      const deleted = await t.http
        .delete(`${credentials}/${(created.body as { id: string }).id}`)
        .set(auth)
        .type(type)
        .send(body);
      expect({ type, body, status: deleted.status }).toEqual({ type, body, status: 204 });
      // Without a token, authentication answers, whatever the body; an unknown route answers as one.
      const anonymous = await t.http.post(`/workspaces/${slug}/databases`).type(type).send(body);
      expect({ type, body, status: anonymous.status }).toEqual({ type, body, status: 401 });
      const unknown = await t.http.post('/no/such/route').type(type).send(body);
      expect({ type, body, status: unknown.status }).toEqual({ type, body, status: 404 });
    }
    // A route that takes a body still refuses them, and acts on nothing.
    const malformed = await t.http.post(`/workspaces/${slug}/databases`).set(auth).type('application/json').send('{');
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({ errorCode: 'bad_request', message: 'Malformed JSON body', statusCode: 400 });
    const charset = await t.http
      .post(`/workspaces/${slug}/databases`)
      .set(auth)
      .type('application/json; charset=latin1')
      .send(JSON.stringify({ databaseName: `latin_${unique()}`, region: 'AWS_US_WEST_2' }));
    expect(charset.status).toBe(415);
    expect(charset.body).toEqual({
      errorCode: 'bad_request',
      message: 'unsupported charset "LATIN1"',
      statusCode: 415,
    });
    expect((await t.http.get(`/workspaces/${slug}/databases`).set(auth).expect(200)).body).toHaveLength(1);
  });

  it("answers what Node's HTTP parser refuses (a request line too long, a malformed request) with the error body", async () => {
    const server = t.app.getHttpServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const tooLong = await rawRequest(port, `GET /workspaces?limit=${'9'.repeat(20000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
      expect(tooLong.status).toBe(431);
      expect(tooLong.headers['content-type']).toMatch(/^application\/json/);
      expect(JSON.parse(tooLong.body)).toEqual({
        errorCode: 'bad_request',
        message: 'The request line or headers are too large',
        statusCode: 431,
      });
      const malformed = await rawRequest(port, 'GET / HTTP/1.1\r\nHost x\r\n\r\n');
      expect(malformed.status).toBe(400);
      expect(JSON.parse(malformed.body)).toEqual({
        errorCode: 'bad_request',
        message: 'Malformed HTTP request',
        statusCode: 400,
      });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('echoes a caller-supplied X-Request-Id and generates one otherwise', async () => {
    const given = await t.http.get('/health').set('X-Request-Id', 'trace-123').expect(200);
    expect(given.headers['x-request-id']).toBe('trace-123');
    const generated = await t.http.get('/health').expect(200);
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
