import { createTestApp, TestApp } from '../support/test-app';
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

const REDIRECT = 'http://localhost:40112/callback';

/** RFC 6749 §3.2: "Parameters sent without a value MUST be treated as if they were omitted from the request." */
describe('token endpoint parameters sent without a value', () => {
  let t: TestApp;
  let human: Human;
  beforeAll(async () => {
    t = await createTestApp(GENEROUS_LIMIT);
    human = await createHuman(t.app, 'empty-params');
  });
  afterAll(() => t.close());

  it('treats an empty scope on a refresh as no scope: the grant’s scope, not invalid_scope', async () => {
    const { params, verifier } = authorizationRequest('nilecli', REDIRECT);
    params.scope = 'workspaces databases';
    const code = await obtainCode(t.http, params, human);
    const first = (await redeemCode(t.http, params, code, verifier).expect(200)).body as { refresh_token: string };
    const res = await tokenRequest(t.http, {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      client_id: 'nilecli',
      scope: '',
    });
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 200, error: undefined });
    expect(res.body.scope).toBe('workspaces databases');
  });

  it('treats an empty code_verifier of a confidential client (PKCE optional) as none', async () => {
    const redirectUri = 'https://app.example/callback';
    const client = await createClient(t.app, { redirectUris: [redirectUri] });
    const params = { response_type: 'code', client_id: client.clientId, redirect_uri: redirectUri, state: 'st' };
    const code = await obtainCode(t.http, params, human);
    const res = await tokenRequest(
      t.http,
      { grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: '' },
      { id: client.clientId, secret: client.clientSecret! },
    );
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 200, error: undefined });
    expect(res.body.refresh_token).toEqual(expect.any(String));
  });

  it('still refuses a parameter given twice with a value, and counts an empty repeat as omitted', async () => {
    const form = (body: string) => t.http.post('/oauth2/token').type('form').send(body);
    const twice = await form('grant_type=client_credentials&client_id=nilecli&client_id=nilecli');
    expect(twice.status).toBe(400);
    expect(twice.body).toMatchObject({
      error: 'invalid_request',
      error_description: 'client_id is given more than once',
    });
    const twiceDifferent = await form('grant_type=refresh_token&refresh_token=x&client_id=nilecli&scope=a&scope=b');
    expect(twiceDifferent.body).toMatchObject({
      error: 'invalid_request',
      error_description: 'scope is given more than once',
    });
    // client_credentials for the public nilecli: unauthorized_client, reached only once the form was read.
    const emptyRepeat = await form('grant_type=client_credentials&client_id=nilecli&client_id=');
    expect(emptyRepeat.body).toMatchObject({ error: 'unauthorized_client' });
    // Only empty values: as if there were no grant_type at all.
    const allEmpty = await form('grant_type=&grant_type=&client_id=nilecli');
    expect(allEmpty.body).toMatchObject({ error: 'invalid_request' });
    expect(allEmpty.body.error_description).not.toMatch(/more than once/);
  });
});
