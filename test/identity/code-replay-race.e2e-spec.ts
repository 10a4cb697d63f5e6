import { createTestApp, TestApp } from '../support/test-app';
import {
  authorizationRequest,
  createHuman,
  GENEROUS_LIMIT,
  Human,
  obtainCode,
  redeemCode,
  tokenRequest,
} from './identity-support';

const NILECLI_REDIRECT = 'http://localhost:53682/callback';

/**
 * RFC 6749 §4.1.2: a code presented twice revokes the tokens it bought. When the two
 * presentations race, the replay must not revoke the family before the winner's refresh token
 * exists (which would leave that token working).
 */
describe('a replayed authorization code racing its first redemption', () => {
  let t: TestApp;
  let human: Human;
  beforeAll(async () => {
    t = await createTestApp(GENEROUS_LIMIT);
    human = await createHuman(t.app);
  });
  afterAll(() => t.close());

  it('lets one redemption win and revokes the refresh token it got', async () => {
    for (let round = 0; round < 40; round++) {
      const { params, verifier } = authorizationRequest('nilecli', NILECLI_REDIRECT);
      const code = await obtainCode(t.http, params, human);
      const [a, b] = await Promise.all([
        redeemCode(t.http, params, code, verifier),
        redeemCode(t.http, params, code, verifier),
      ]);
      const statuses = [a.status, b.status].sort();
      expect(statuses).toEqual([200, 400]);
      const winner = a.status === 200 ? a : b;
      const refresh = await tokenRequest(t.http, {
        grant_type: 'refresh_token',
        refresh_token: winner.body.refresh_token,
        client_id: 'nilecli',
      });
      expect({ round, status: refresh.status, error: refresh.body.error }).toEqual({
        round,
        status: 400,
        error: 'invalid_grant',
      });
    }
  });
});
