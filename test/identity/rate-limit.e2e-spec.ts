import Redis from 'ioredis';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { SecretBox } from '../../src/common/crypto/secret-box';
import { AppConfig } from '../../src/config/app-config';
import { expectRefusalPage } from '../support/html-page';
import { createTestApp, TestApp } from '../support/test-app';
import {
  GENEROUS_LIMIT,
  authorizationRequest,
  createApiDeveloper,
  createHuman,
  Human,
  submitLogin,
  tokenRequest,
} from './identity-support';

const LIMIT = 3;

function expectThrottled(res: { status: number; body: Record<string, unknown>; headers: Record<string, string> }) {
  expect(res.status).toBe(429);
  expect(res.body).toEqual({ errorCode: 'threshold_exceeded', message: expect.any(String), statusCode: 429 });
  const retryAfter = Number(res.headers['retry-after']);
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

/** The login form's refusals are pages for the person at the browser (the token endpoint's are JSON). */
const expectAddressThrottledPage = (res: Parameters<typeof expectRefusalPage>[0]) =>
  expectRefusalPage(res, 429, 'Too many attempts; retry in', { retryAfterAtMost: 60 });
const expectAccountThrottledPage = (res: Parameters<typeof expectRefusalPage>[0]) =>
  expectRefusalPage(res, 429, 'Too many sign-in attempts for this account', { withForm: true, retryAfterAtMost: 3600 });

describe('brute-force protection (RATE_LIMIT_AUTH_PER_MINUTE)', () => {
  let t: TestApp;
  let human: Human;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_AUTH_PER_MINUTE: String(LIMIT) });
    human = await createHuman(t.app, 'throttled');
  });
  afterAll(() => t.close());

  it('limits token requests per client and address, with Retry-After', async () => {
    const api = await createApiDeveloper(t.app);
    for (let i = 0; i < LIMIT; i++) {
      const res = await tokenRequest(
        t.http,
        { grant_type: 'client_credentials' },
        { id: api.clientId, secret: 'guess' },
      );
      expect(res.status).toBe(401);
    }
    // Even the right secret is refused now: guessing is not worth it.
    const blocked = await tokenRequest(
      t.http,
      { grant_type: 'client_credentials' },
      { id: api.clientId, secret: api.clientSecret },
    );
    expectThrottled(blocked);

    // Another client from the same address has its own budget.
    const other = await createApiDeveloper(t.app);
    await tokenRequest(t.http, {
      grant_type: 'client_credentials',
      client_id: other.clientId,
      client_secret: other.clientSecret,
    }).expect(200);
  });

  it('limits login attempts per client and address, with Retry-After', async () => {
    const { params } = authorizationRequest('nilecli', 'http://localhost:5000/callback');
    for (let i = 0; i < LIMIT; i++) {
      const res = await submitLogin(t.http, params, human.email, `wrong-${i}`);
      expect(res.status).toBe(401);
    }
    expectAddressThrottledPage(await submitLogin(t.http, params, human.email, human.password));
    // Showing the form is not an attempt.
    await t.http.get('/authorize').query(params).expect(200);
  });

  it('counts login attempts whatever Authorization header comes with them: it authenticates nothing there', async () => {
    const { params } = authorizationRequest('nilecli', 'http://localhost:5000/callback');
    const address = '198.51.100.23'; // an address of this test's own (X-Forwarded-For is trusted from loopback)
    const attempt = (password: string) =>
      submitLogin(t.http, params, human.email, password)
        .set('X-Forwarded-For', address)
        .set('Authorization', `Basic ${Buffer.from(`${randomUUID()}:x`).toString('base64')}`);
    for (let i = 0; i < LIMIT; i++) expect((await attempt(`wrong-${i}`)).status).toBe(401);
    expectAddressThrottledPage(await attempt(human.password));
  });

  it('counts an IPv6 client by its /64 network, which one host can fill with addresses', async () => {
    const { params } = authorizationRequest('nilecli', 'http://localhost:5000/callback');
    const from = (address: string, password: string) =>
      submitLogin(t.http, params, human.email, password).set('X-Forwarded-For', address);
    for (let i = 0; i < LIMIT; i++) expect((await from(`2001:db8:7:9::${i + 1}`, `wrong-${i}`)).status).toBe(401);
    expectAddressThrottledPage(await from('2001:db8:7:9:ffff::1', human.password));
    // Another /64 has a budget of its own.
    expect((await from('2001:db8:7:a::1', human.password)).status).toBe(302);
  });
});

describe('the client address behind a proxy (TRUST_PROXY)', () => {
  /** Wrong passwords from LIMIT addresses by X-Forwarded-For, then the right one from yet another. */
  async function lastFromAnotherAddress(env: Record<string, string>) {
    const t = await createTestApp({ RATE_LIMIT_AUTH_PER_MINUTE: String(LIMIT), ...env });
    try {
      const human = await createHuman(t.app, 'proxied');
      const { params } = authorizationRequest('nilecli', 'http://localhost:5000/callback');
      const from = (address: string, password: string) =>
        submitLogin(t.http, params, human.email, password).set('X-Forwarded-For', address);
      for (let i = 0; i < LIMIT; i++) expect((await from(`192.0.2.${i + 1}`, `wrong-${i}`)).status).toBe(401);
      return await from('192.0.2.200', human.password);
    } finally {
      await t.close();
    }
  }

  it('counts each forwarded address on its own when the peer is a trusted proxy (loopback by default)', async () => {
    expect((await lastFromAnotherAddress({})).status).toBe(302);
  });

  it('counts every request as the peer’s when the peer is not trusted: X-Forwarded-For is not believed', async () => {
    expectAddressThrottledPage(await lastFromAnotherAddress({ TRUST_PROXY: '10.0.0.0/8' }));
    expectAddressThrottledPage(await lastFromAnotherAddress({ TRUST_PROXY: 'false' }));
  });
});

describe('rate limits shared by several API processes (counted in Redis)', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    // Two processes of one deployment: one metadata database, one Redis, one QUEUE_PREFIX.
    const shared = { RATE_LIMIT_AUTH_PER_MINUTE: String(LIMIT), QUEUE_PREFIX: `shared-limit-${Date.now()}` };
    a = await createTestApp(shared);
    b = await createTestApp(shared);
  });
  afterAll(async () => {
    await a.close();
    await b.close();
  });

  it('counts attempts on either process against one budget', async () => {
    const api = await createApiDeveloper(a.app);
    const guess = (t: TestApp) =>
      tokenRequest(t.http, { grant_type: 'client_credentials' }, { id: api.clientId, secret: 'guess' });
    expect((await guess(a)).status).toBe(401);
    expect((await guess(b)).status).toBe(401);
    expect((await guess(a)).status).toBe(401);
    // The budget is spent, whichever process answers next.
    expectThrottled(await guess(b));
    expectThrottled(await guess(a));
  });
});

describe('password attempts per account, from any address (RATE_LIMIT_LOGIN_PER_ACCOUNT_PER_HOUR)', () => {
  let t: TestApp;
  const { params } = authorizationRequest('nilecli', 'http://localhost:5000/callback');
  // Each attempt from an address of its own: the per-address limit never applies.
  let nextAddress = 1;
  const attempt = (email: string, password: string) =>
    submitLogin(t.http, params, email, password).set('X-Forwarded-For', `198.51.100.${nextAddress++}`);

  beforeAll(async () => {
    t = await createTestApp({ ...GENEROUS_LIMIT, RATE_LIMIT_LOGIN_PER_ACCOUNT_PER_HOUR: String(LIMIT) });
  });
  afterAll(() => t.close());

  it("refuses an account's further attempts, even with the right password, once its budget is spent from many addresses", async () => {
    const human = await createHuman(t.app, 'many-addresses');
    for (let i = 0; i < LIMIT; i++) expect((await attempt(human.email, `wrong-${i}`)).status).toBe(401);
    const refused = await attempt(human.email, human.password);
    expectAccountThrottledPage(refused);
    // The form again, with the e-mail as entered, to sign in once the wait is over.
    expect(refused.text).toContain(`value="${human.email}"`);
    // Written another way, the e-mail is the same account.
    expectAccountThrottledPage(await attempt(` ${human.email.toUpperCase()} `, human.password));
    // Other accounts are not affected.
    const other = await createHuman(t.app, 'bystander');
    expect((await attempt(other.email, other.password)).status).toBe(302);
  });

  it('answers an e-mail without an account the same way, so the limit tells nothing about who has one', async () => {
    const nobody = `nobody-${randomUUID()}@example.com`;
    for (let i = 0; i < LIMIT; i++) expect((await attempt(nobody, `wrong-${i}`)).status).toBe(401);
    expectAccountThrottledPage(await attempt(nobody, 'anything'));
  });

  it('keeps the count under a keyed digest of the e-mail: Redis holds nothing a list of addresses could be hashed to match', async () => {
    const human = await createHuman(t.app, 'digest');
    expect((await attempt(human.email, 'wrong')).status).toBe(401);
    const config = t.app.get(AppConfig);
    const redis = new Redis(config.env.REDIS_URL);
    try {
      const keys = await redis.keys(`${config.env.QUEUE_PREFIX}:throttle:login-account:*`);
      const digests = keys.map((key) => key.slice(key.lastIndexOf(':') + 1));
      expect(digests).toContain(t.app.get(SecretBox).mac('login-account', human.email));
      expect(digests).not.toContain(createHash('sha256').update(human.email).digest('base64url'));
      expect(keys.some((key) => key.includes(human.email))).toBe(false);
    } finally {
      redis.disconnect();
    }
  });

  it('starts the count again after a right password', async () => {
    const human = await createHuman(t.app, 'typo-prone');
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < LIMIT - 1; i++) expect((await attempt(human.email, `typo-${i}`)).status).toBe(401);
      expect((await attempt(human.email, human.password)).status).toBe(302);
    }
  });
});

describe('password attempts per account across a key rotation (a new first CREDENTIAL_ENCRYPTION_KEYS key)', () => {
  /** A replica with the keys of before the rotation, and one given the new key first. */
  let before: TestApp;
  let after: TestApp;
  const { params } = authorizationRequest('nilecli', 'http://localhost:5000/callback');
  let nextAddress = 1;
  const attempt = (t: TestApp, email: string, password: string) =>
    submitLogin(t.http, params, email, password).set('X-Forwarded-For', `203.0.113.${nextAddress++}`);

  beforeAll(async () => {
    const shared = {
      ...GENEROUS_LIMIT,
      RATE_LIMIT_LOGIN_PER_ACCOUNT_PER_HOUR: String(LIMIT),
      QUEUE_PREFIX: `rotated-limit-${Date.now()}`,
    };
    before = await createTestApp(shared);
    const old = before.app
      .get(AppConfig)
      .secrets.credentialKeys.map(({ id, key }) => `${id}:${key.toString('base64')}`)
      .join(',');
    after = await createTestApp({
      ...shared,
      CREDENTIAL_ENCRYPTION_KEYS: `rotated:${randomBytes(32).toString('base64')},${old}`,
    });
  });
  afterAll(async () => {
    await before.close();
    await after.close();
  });

  it('counts the attempts made under the old key against the same budget: a rotation does not start the count again', async () => {
    const human = await createHuman(before.app, 'rotation');
    for (let i = 0; i < LIMIT - 1; i++) expect((await attempt(before, human.email, `wrong-${i}`)).status).toBe(401);
    expect((await attempt(after, human.email, 'wrong-again')).status).toBe(401);
    expectAccountThrottledPage(await attempt(after, human.email, human.password));
  });

  it('says to retry when the total is within the budget again: when the counts under the old key run out, not an hour later', async () => {
    const human = await createHuman(before.app, 'rotation-retry');
    const config = after.app.get(AppConfig);
    const [, underOld] = after.app.get(SecretBox).macs('login-account', human.email);
    const redis = new Redis(config.env.REDIS_URL);
    try {
      await redis.set(`${config.env.QUEUE_PREFIX}:throttle:login-account:${underOld}`, String(LIMIT), 'PX', 60_000);
    } finally {
      redis.disconnect();
    }
    const refused = await attempt(after, human.email, 'wrong');
    expectAccountThrottledPage(refused);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
  });

  it('starts the count again after a right password on either replica, under every key', async () => {
    const human = await createHuman(before.app, 'rotation-typo');
    for (let i = 0; i < LIMIT - 1; i++) expect((await attempt(before, human.email, `typo-${i}`)).status).toBe(401);
    expect((await attempt(after, human.email, human.password)).status).toBe(302);
    for (let i = 0; i < LIMIT - 1; i++) expect((await attempt(before, human.email, `typo-${i}`)).status).toBe(401);
    expect((await attempt(before, human.email, human.password)).status).toBe(302);
  });
});

describe('password attempts per account with one key listed under two ids', () => {
  let t: TestApp;
  const { params } = authorizationRequest('nilecli', 'http://localhost:5000/callback');
  let nextAddress = 1;
  const attempt = (email: string, password: string) =>
    submitLogin(t.http, params, email, password).set('X-Forwarded-For', `192.0.2.${nextAddress++}`);

  beforeAll(async () => {
    const base = await createTestApp();
    const keys = base.app.get(AppConfig).secrets.credentialKeys;
    await base.close();
    const listed = keys.map(({ id, key }) => `${id}:${key.toString('base64')}`).join(',');
    t = await createTestApp({
      ...GENEROUS_LIMIT,
      RATE_LIMIT_LOGIN_PER_ACCOUNT_PER_HOUR: String(LIMIT),
      CREDENTIAL_ENCRYPTION_KEYS: `renamed:${keys[0].key.toString('base64')},${listed}`,
    });
  });
  afterAll(() => t.close());

  it('counts each attempt once', async () => {
    const human = await createHuman(t.app, 'renamed-key');
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT; i++) statuses.push((await attempt(human.email, `wrong-${i}`)).status);
    expect(statuses).toEqual(Array(LIMIT).fill(401));
    expectAccountThrottledPage(await attempt(human.email, human.password));
  });
});
