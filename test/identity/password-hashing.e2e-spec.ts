import { expectRefusalPage } from '../support/html-page';
import { createTestApp, TestApp } from '../support/test-app';
import { GENEROUS_LIMIT, authorizationRequest, createHuman, Human, submitLogin } from './identity-support';

describe('password hashing is bounded per process (PASSWORD_HASHING_CONCURRENCY, PASSWORD_HASHING_QUEUE)', () => {
  let t: TestApp;
  let human: Human;
  const { params } = authorizationRequest('nilecli', 'http://localhost:5000/callback');

  beforeAll(async () => {
    // One hash at a time and one waiting; each attempt from its own address, so no rate limit applies.
    t = await createTestApp({ ...GENEROUS_LIMIT, PASSWORD_HASHING_CONCURRENCY: '1', PASSWORD_HASHING_QUEUE: '1' });
    human = await createHuman(t.app, 'flooded');
  });
  afterAll(() => t.close());

  it('answers 503 with Retry-After to attempts beyond the bound instead of queueing them, and recovers', async () => {
    const flood = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        submitLogin(t.http, params, human.email, `wrong-${i}`).set('X-Forwarded-For', `203.0.113.${i + 1}`),
      ),
    );
    const refused = flood.filter((res) => res.status === 503);
    expect(flood.map((res) => res.status).every((status) => status === 401 || status === 503)).toBe(true);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const res of refused) {
      // The login form again, for the person at the browser, saying to retry in a second.
      expectRefusalPage(res, 503, 'Too many sign-ins are being checked right now', { withForm: true });
      expect(res.headers['retry-after']).toBe('1');
    }
    // Once the hashes under way are done, sign-in works again.
    expect((await submitLogin(t.http, params, human.email, human.password)).status).toBe(302);
  });
});
