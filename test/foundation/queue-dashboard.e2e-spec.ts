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

  it('asks for the operator password and shows every queue to the operator', async () => {
    const password = 'operator-password-for-tests';
    t = await createTestApp({ OPERATOR_PASSWORD: password });
    const anonymous = await t.http.get('/admin/queues').expect(401);
    expect(anonymous.headers['www-authenticate']).toMatch(/^Basic/);
    await t.http.get('/admin/queues').auth('operator', 'wrong-password').expect(401);
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
});
