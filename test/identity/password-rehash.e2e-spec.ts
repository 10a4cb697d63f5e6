import { randomBytes, scryptSync } from 'node:crypto';
import { DataSource } from 'typeorm';
import { SCRYPT_PARAMS, verifySecret } from '../../src/common/crypto/password-hasher';
import { createTestApp, TestApp } from '../support/test-app';
import { authorizationRequest, createClient, createHuman, GENEROUS_LIMIT, submitLogin } from './identity-support';

function legacyHash(secret: string): string {
  const salt = randomBytes(16);
  const key = scryptSync(secret, salt, 64, { N: 2 ** 14, r: 8, p: 1 });
  return ['scrypt', 2 ** 14, 8, 1, salt.toString('base64'), key.toString('base64')].join('$');
}

describe('password hashes made with older parameters', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(GENEROUS_LIMIT);
  });
  afterAll(() => t.close());

  async function storedHash(ds: DataSource, id: string): Promise<string> {
    const [row] = await ds.query<{ password_hash: string }[]>('SELECT password_hash FROM developers WHERE id = $1', [
      id,
    ]);
    return row.password_hash;
  }

  it('are upgraded to the current scrypt parameters on the next successful login, and keep working', async () => {
    const human = await createHuman(t.app, 'legacy');
    await t.dataSource.query('UPDATE developers SET password_hash = $2 WHERE id = $1', [
      human.id,
      legacyHash(human.password),
    ]);
    const client = await createClient(t.app, { redirectUris: ['http://127.0.0.1:9/cb'] });

    const wrong = await submitLogin(
      t.http,
      authorizationRequest(client.clientId, 'http://127.0.0.1:9/cb').params,
      human.email,
      'not it',
    );
    expect(wrong.status).toBe(401);
    expect((await storedHash(t.dataSource, human.id)).split('$')[1]).toBe(String(2 ** 14));

    const ok = await submitLogin(
      t.http,
      authorizationRequest(client.clientId, 'http://127.0.0.1:9/cb').params,
      human.email,
      human.password,
    );
    expect(ok.status).toBe(302);
    const upgraded = await storedHash(t.dataSource, human.id);
    expect(upgraded.split('$').slice(1, 4).map(Number)).toEqual([SCRYPT_PARAMS.N, SCRYPT_PARAMS.r, SCRYPT_PARAMS.p]);
    expect(await verifySecret(human.password, upgraded)).toBe(true);

    const again = await submitLogin(
      t.http,
      authorizationRequest(client.clientId, 'http://127.0.0.1:9/cb').params,
      human.email,
      human.password,
    );
    expect(again.status).toBe(302);
    expect(await storedHash(t.dataSource, human.id)).toBe(upgraded);
  });

  it('make a wrong password take as long as an unknown e-mail does: old accounts are not told apart by time', async () => {
    const human = await createHuman(t.app, 'legacy-timing');
    await t.dataSource.query('UPDATE developers SET password_hash = $2 WHERE id = $1', [
      human.id,
      legacyHash(human.password),
    ]);
    const client = await createClient(t.app, { redirectUris: ['http://127.0.0.1:9/cb'] });
    const params = authorizationRequest(client.clientId, 'http://127.0.0.1:9/cb').params;
    const timed = async (email: string) => {
      const started = performance.now();
      expect((await submitLogin(t.http, params, email, 'not it')).status).toBe(401);
      return performance.now() - started;
    };
    const unknown: number[] = [];
    const legacy: number[] = [];
    for (let i = 0; i < 3; i++) {
      unknown.push(await timed(`nobody-${i}-${human.email}`));
      legacy.push(await timed(human.email));
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[1];
    // Its own check costs an eighth of the decoy's (N = 2^14 against 2^17): without the wait it
    // would answer in a fraction of the time.
    expect(median(legacy)).toBeGreaterThan(0.7 * median(unknown));
    // The hash is not upgraded by a wrong password; the right one upgrades it (and leaves no old
    // hash behind for the specs that check every stored hash).
    expect((await storedHash(t.dataSource, human.id)).split('$')[1]).toBe(String(2 ** 14));
    expect((await submitLogin(t.http, params, human.email, human.password)).status).toBe(302);
    expect((await storedHash(t.dataSource, human.id)).split('$')[1]).toBe(String(SCRYPT_PARAMS.N));
  });
});
