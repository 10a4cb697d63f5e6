import { waitForInstance } from '../compute/support';
import { Auth, createReadyDatabase, createWorkspace, DatabaseBody, unique } from '../databases/support';
import { createDeveloperWithToken, createTestApp, TestApp } from '../support/test-app';

const FORM = 'application/x-www-form-urlencoded';

/**
 * The published API declares the workspace create, the credential rotation, the compute create and
 * update and the subscription writes as `*∕*` with a JSON payload, so clients send them with any
 * Content-Type: curl's `-d '{"name":"x"}'` sends application/x-www-form-urlencoded. Those bodies
 * are read as JSON whatever their type; forms are read only where the app takes forms (the token
 * endpoint, the login page, the invite join page).
 */
describe('bodies published as */* are JSON, even sent as a form', () => {
  let t: TestApp;
  let auth: Auth;
  let slug: string;
  let db: DatabaseBody;
  let instanceId: string;
  /** A workspace whose subscription is closed, so POST …/subscription may start one. */
  let unsubscribed: string;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_AUTH_PER_MINUTE: '100000' });
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
    db = await createReadyDatabase(t, auth, slug);
    await t.http.post(`/workspaces/${slug}/databases/${db.name}/credentials`).set(auth).expect(200);
    const created = await t.http
      .post(`/workspaces/${slug}/databases/${db.name}/compute`)
      .set(auth)
      .send({ instanceSize: 'dc-small', instanceName: 'form_fixture' })
      .expect(202);
    instanceId = created.body.instanceId as string;
    await waitForInstance(t, auth, slug, db.name, instanceId, 'READY');
    unsubscribed = (await createWorkspace(t, auth)).slug;
    const free = await t.http.get(`/workspaces/${unsubscribed}/subscription`).set(auth).expect(200);
    await t.http.delete(`/workspaces/${unsubscribed}/subscription/${free.body.subscriptionId}`).set(auth).expect(200);
  });
  afterAll(() => t.close());

  /** Every operation the published document declares `*∕*` with a body, a valid JSON payload, its answer. */
  const operations = (): {
    name: string;
    method: 'post' | 'put';
    path: string;
    body: object;
    status: number;
    shows: object;
  }[] => {
    const compute = `/workspaces/${slug}/databases/${db.name}/compute`;
    const name = `Form ${unique()}`;
    return [
      { name: 'POST /workspaces', method: 'post', path: '/workspaces', body: { name }, status: 201, shows: { name } },
      {
        name: 'POST …/credentials/rotate',
        method: 'post',
        path: `/workspaces/${slug}/databases/${db.name}/credentials/rotate`,
        body: { delayOldSecretsExpirationHours: 1, reason: 'sent as a form' },
        status: 200,
        shows: { password: expect.any(String) },
      },
      {
        name: 'POST …/compute',
        method: 'post',
        path: compute,
        body: { instanceSize: 'dc-small', instanceName: 'created_as_form' },
        status: 202,
        shows: { instanceName: 'created_as_form' },
      },
      {
        name: 'PUT …/compute/{instanceId}',
        method: 'put',
        path: `${compute}/${instanceId}`,
        body: { instanceName: 'renamed_as_form' },
        status: 200,
        shows: { id: db.id },
      },
      {
        name: 'POST …/subscription',
        method: 'post',
        path: `/workspaces/${unsubscribed}/subscription`,
        body: { level: 'FREE' },
        status: 201,
        shows: { level: 'FREE' },
      },
      {
        name: 'PUT …/subscription',
        method: 'put',
        path: `/workspaces/${slug}/subscription`,
        body: { level: 'PRO' },
        status: 200,
        shows: { level: 'PRO' },
      },
    ];
  };

  it('reads a JSON body sent as application/x-www-form-urlencoded (curl -d) on every */* operation', async () => {
    for (const op of operations()) {
      const res = await t.http[op.method](op.path).set(auth).set('Content-Type', FORM).send(JSON.stringify(op.body));
      expect({ op: op.name, status: res.status, body: res.body }).toEqual({
        op: op.name,
        status: op.status,
        body: expect.objectContaining(op.shows),
      });
    }
    const instance = await t.http.get(`/workspaces/${slug}/databases/${db.name}/compute/${instanceId}`).set(auth);
    expect(instance.body.instanceName).toBe('renamed_as_form');
    // With a charset parameter too.
    const name = `Form ${unique()}`;
    const res = await t.http
      .post('/workspaces')
      .set(auth)
      .set('Content-Type', `${FORM}; charset=utf-8`)
      .send(JSON.stringify({ name }));
    expect({ status: res.status, name: res.body.name }).toEqual({ status: 201, name });
  });

  it('answers a form that is not JSON on those operations with 400 Malformed JSON body', async () => {
    for (const op of operations()) {
      const res = await t.http[op.method](op.path).set(auth).set('Content-Type', FORM).send('name=x&level=PRO');
      expect({ op: op.name, status: res.status, body: res.body }).toEqual({
        op: op.name,
        status: 400,
        body: { errorCode: 'bad_request', message: 'Malformed JSON body', statusCode: 400 },
      });
    }
  });

  it('does not read a form sent to an operation that takes application/json: 415 says what it takes', async () => {
    const res = await t.http
      .post(`/workspaces/${slug}/invites`)
      .set(auth)
      .set('Content-Type', FORM)
      .send('email=someone%40example.com');
    expect(res.status).toBe(415);
    expect(res.body).toEqual({
      errorCode: 'bad_request',
      message: `The request body must be application/json; it was sent as ${FORM}`,
      statusCode: 415,
    });
  });

  it('still reads forms where the app takes them: the token endpoint, the login page, the join page', async () => {
    // An unknown client is invalid_client (401); an unread form would be invalid_request (400).
    const token = await t.http
      .post('/oauth2/token')
      .type('form')
      .send({ grant_type: 'client_credentials', client_id: 'no-such-client', client_secret: 'x' });
    expect(token.status).toBe(401);
    expect(token.body).toMatchObject({ error: 'invalid_client', errorCode: 'invalid_credentials' });

    // Wrong credentials re-render the form (401); an unread form would be an error page (400).
    const login = await t.http
      .post('/authorize')
      .type('form')
      .send({
        client_id: 'nilecli',
        redirect_uri: 'http://localhost:1234/callback',
        response_type: 'code',
        code_challenge: 'a'.repeat(43),
        code_challenge_method: 'S256',
        email: 'nobody@example.test',
        password: 'not-the-password',
      });
    expect(login.status).toBe(401);
    expect(login.headers['content-type']).toMatch(/text\/html/);

    // An unknown code shows the error page (404); an unread form would lack code and password (400).
    const join = await t.http.post('/invites/join').type('form').send({ code: 'no-such-code', password: 'x' });
    expect(join.status).toBe(404);
    expect(join.headers['content-type']).toMatch(/text\/html/);
  });
});
