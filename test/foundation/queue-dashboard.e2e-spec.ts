import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { createTestApp, TestApp } from '../support/test-app';

describe('queue dashboard (/admin/queues)', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('is not served when no operator password is configured', async () => {
    t = await createTestApp({ OPERATOR_PASSWORD: '' });
    const res = await t.http.get('/admin/queues').expect(404);
    expect(res.body.errorCode).toBe('entity_not_found');
  });

  it('asks for the operator password (401 with the error body) and shows every queue to the operator', async () => {
    const password = 'operator-password-for-tests';
    t = await createTestApp({ OPERATOR_PASSWORD: password });
    const refused = {
      errorCode: 'invalid_credentials',
      message: 'Operator credentials required',
      statusCode: 401,
    };
    const anonymous = await t.http.get('/admin/queues').expect(401);
    expect(anonymous.headers['www-authenticate']).toMatch(/^Basic/);
    expect(anonymous.body).toEqual(refused);
    const wrong = await t.http.get('/admin/queues').auth('operator', 'wrong-password').expect(401);
    expect(wrong.body).toEqual(refused);
    await t.http.get('/admin/queues').auth('operator', password).expect(200);
    const queues = await t.http.get('/admin/queues/api/queues').auth('operator', password).expect(200);
    const names = (queues.body.queues as { name: string }[]).map((q) => q.name).sort();
    expect(names).toEqual([
      'billing',
      'compute-lifecycle',
      'credential-expiry',
      'database-lifecycle',
      'invite-email',
      'telemetry',
    ]);
  });

  it('refuses a body it cannot read with 400 before the dashboard acts on it (no job added), after the operator is asked for', async () => {
    const password = 'operator-password-for-tests';
    t = await createTestApp({ OPERATOR_PASSWORD: password, WORKERS: 'off' });
    const queue = t.app.get(JobDispatcher).queue('telemetry');
    const before = await queue.count();
    const add = () =>
      t!.http.post('/admin/queues/api/queues/telemetry/add').type('application/json').send('{"name": "x", ');
    expect((await add()).status).toBe(401);
    const res = await add().auth('operator', password);
    expect({ status: res.status, body: res.body as unknown, added: (await queue.count()) - before }).toEqual({
      status: 400,
      body: { errorCode: 'bad_request', message: 'Malformed JSON body', statusCode: 400 },
      added: 0,
    });
  });
});
