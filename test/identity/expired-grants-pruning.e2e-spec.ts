import { AuthorizationCodesService } from '../../src/auth/oauth/authorization-codes.service';
import { PRUNE_BATCH, PRUNE_BATCHES_PER_PASS } from '../../src/database/prune-in-batches';
import { RefreshTokensService } from '../../src/auth/oauth/refresh-tokens.service';
import { createIsolatedTestApp, reconcile, TestApp } from '../support/test-app';
import {
  authorizationRequest,
  createClient,
  createHuman,
  GENEROUS_LIMIT,
  Human,
  obtainCode,
  redeemCode,
  tokenRequest,
} from './identity-support';

const REDIRECT = 'http://127.0.0.1:40112/callback';
const HASH = `encode(sha256($1::bytea), 'hex')`;

/**
 * Expired refresh tokens and authorization codes are deleted by the reconciler once
 * OAUTH_EXPIRED_RETENTION_DAYS (7 by default) have passed since they expired. On a metadata
 * database of its own: a pass here must see only this spec's rows.
 */
describe('pruning of expired refresh tokens and authorization codes', () => {
  let t: TestApp;
  let human: Human;
  let clientId: string;
  beforeAll(async () => {
    t = await createIsolatedTestApp(GENEROUS_LIMIT);
    human = await createHuman(t.app);
    clientId = (await createClient(t.app, { redirectUris: ['http://127.0.0.1/callback'], isPublic: true })).clientId;
  });
  afterAll(() => t.close());

  async function login() {
    const { params, verifier } = authorizationRequest(clientId, REDIRECT);
    const code = await obtainCode(t.http, params, human);
    const res = await redeemCode(t.http, params, code, verifier).expect(200);
    return { code, params, verifier, tokens: res.body as { access_token: string; refresh_token: string } };
  }

  const refresh = (refreshToken: string) =>
    tokenRequest(t.http, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId });

  /** Moves the token's (or code's) expiry `days` into the past. */
  const expireTokenDaysAgo = (token: string, days: number) =>
    t.dataSource.query(
      `UPDATE oauth_refresh_tokens SET expires_at = now() - make_interval(days => $2) WHERE token_hash = ${HASH}`,
      [token, days],
    );
  const expireCodeDaysAgo = (code: string, days: number) =>
    t.dataSource.query(
      `UPDATE oauth_authorization_codes SET expires_at = now() - make_interval(days => $2) WHERE code_hash = ${HASH}`,
      [code, days],
    );
  const tokenKept = async (token: string) =>
    (await t.dataSource.query(`SELECT 1 FROM oauth_refresh_tokens WHERE token_hash = ${HASH}`, [token])).length === 1;
  const codeKept = async (code: string) =>
    (await t.dataSource.query(`SELECT 1 FROM oauth_authorization_codes WHERE code_hash = ${HASH}`, [code])).length ===
    1;

  it('deletes what expired more than the retention ago, keeps recent and live rows, and the family keeps working', async () => {
    const { code, tokens } = await login();
    const second = (await refresh(tokens.refresh_token).expect(200)).body as { refresh_token: string };
    const third = (await refresh(second.refresh_token).expect(200)).body as { refresh_token: string };
    // Used tokens of the family: one expired 8 days ago (past the retention), one 6 days ago.
    await expireTokenDaysAgo(tokens.refresh_token, 8);
    await expireTokenDaysAgo(second.refresh_token, 6);
    await expireCodeDaysAgo(code, 8);
    const recent = await login();
    await expireCodeDaysAgo(recent.code, 6);
    // A live code, not redeemed yet.
    const { params: pendingParams, verifier: pendingVerifier } = authorizationRequest(clientId, REDIRECT);
    const pendingCode = await obtainCode(t.http, pendingParams, human);

    await reconcile(t.app);

    expect(await tokenKept(tokens.refresh_token)).toBe(false);
    expect(await codeKept(code)).toBe(false);
    expect(await tokenKept(second.refresh_token)).toBe(true);
    expect(await tokenKept(third.refresh_token)).toBe(true);
    expect(await codeKept(recent.code)).toBe(true);
    expect(await codeKept(pendingCode)).toBe(true);
    expect(await tokenKept(recent.tokens.refresh_token)).toBe(true);

    // The family's live token still works, and so does its successor.
    const fourth = (await refresh(third.refresh_token).expect(200)).body as { refresh_token: string };
    // The pruned token is unknown now: refused, the family left alone.
    const pruned = await refresh(tokens.refresh_token);
    expect(pruned.body).toMatchObject({ error: 'invalid_grant', statusCode: 400 });
    expect(pruned.body.error_description).toMatch(/Unknown refresh token/);
    // So is the pruned code, replayed: refused, the tokens it granted left alone.
    const replayedCode = await tokenRequest(t.http, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      client_id: clientId,
      code_verifier: 'x'.repeat(43),
    });
    expect(replayedCode.body).toMatchObject({ error: 'invalid_grant' });
    expect(replayedCode.body.error_description).toMatch(/Unknown authorization code/);
    const fifth = (await refresh(fourth.refresh_token).expect(200)).body as { refresh_token: string };
    // The pending code is still good.
    await redeemCode(t.http, pendingParams, pendingCode, pendingVerifier).expect(200);

    // Within the retention a used token presented again still revokes its family.
    const reuse = await refresh(second.refresh_token);
    expect(reuse.body.error_description).toMatch(/already used/);
    expect((await refresh(fifth.refresh_token)).body.error_description).toMatch(/revoked/);
    // And a replayed code, expired within the retention, still revokes what it granted.
    const replayedRecent = await redeemCode(t.http, recent.params, recent.code, recent.verifier);
    expect(replayedRecent.body.error_description).toMatch(/already used/);
    expect((await refresh(recent.tokens.refresh_token)).body.error_description).toMatch(/revoked/);
  });

  it('deletes in bounded batches: a backlog takes several passes', async () => {
    const perPass = PRUNE_BATCH * PRUNE_BATCHES_PER_PASS;
    const [{ id: developerId }] = await t.dataSource.query<{ id: string }[]>(
      'SELECT id FROM developers WHERE email = $1',
      [human.email],
    );
    await t.dataSource.query(
      `INSERT INTO oauth_refresh_tokens (token_hash, family_id, client_id, developer_id, expires_at, used_at)
       SELECT md5('backlog' || g) || md5('token' || g), gen_random_uuid(), $1, $2,
              now() - interval '30 days' - g * interval '1 second', now() - interval '60 days'
         FROM generate_series(1, $3::int) g`,
      [clientId, developerId, perPass + 250],
    );
    await t.dataSource.query(
      `INSERT INTO oauth_authorization_codes (code_hash, client_id, developer_id, redirect_uri, expires_at)
       SELECT md5('backlog' || g) || md5('code' || g), $1, $2, $3, now() - interval '30 days' - g * interval '1 second'
         FROM generate_series(1, 40) g`,
      [clientId, developerId, REDIRECT],
    );
    const backlog = async () => {
      const [{ count }] = await t.dataSource.query<{ count: string }[]>(
        `SELECT count(*) AS count FROM oauth_refresh_tokens WHERE expires_at < now() - interval '29 days'`,
      );
      return Number(count);
    };

    expect(await t.app.get(RefreshTokensService).pruneExpired()).toBe(perPass);
    expect(await backlog()).toBe(250);
    expect(await t.app.get(AuthorizationCodesService).pruneExpired()).toBe(40);
    expect(await t.app.get(RefreshTokensService).pruneExpired()).toBe(250);
    expect(await backlog()).toBe(0);
    expect(await t.app.get(RefreshTokensService).pruneExpired()).toBe(0);
  });
});
