import { ApiException } from '../../common/errors/api-exception';
import { basicClientId, presentedClient } from './client-credentials';

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

function errorOf(fn: () => unknown): Record<string, unknown> {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiException) return { ...err.body, status: err.getStatus() };
    throw err;
  }
  throw new Error('no error');
}

describe('client authentication at the token endpoint', () => {
  it('reads Basic credentials, form-urlencoded inside (RFC 6749 §2.3.1)', () => {
    expect(presentedClient(basic('my app', 'p:a%ss'), {})).toEqual({
      clientId: 'my app',
      clientSecret: 'p:a%ss',
      method: 'client_secret_basic',
    });
    expect(basicClientId(basic('my app', 'x'))).toBe('my app');
    expect(basicClientId('Bearer abc')).toBeUndefined();
  });

  it('reads form credentials, or a bare client id for public clients', () => {
    expect(presentedClient(undefined, { client_id: 'a', client_secret: 's' })).toEqual({
      clientId: 'a',
      clientSecret: 's',
      method: 'client_secret_post',
    });
    expect(presentedClient(undefined, { client_id: 'nilecli' })).toEqual({ clientId: 'nilecli', method: 'none' });
  });

  it('refuses two methods at once, a mismatched client_id, other schemes and no client', () => {
    expect(errorOf(() => presentedClient(basic('a', 's'), { client_secret: 's' }))).toMatchObject({
      error: 'invalid_request',
      status: 400,
    });
    expect(errorOf(() => presentedClient(basic('a', 's'), { client_id: 'b' }))).toMatchObject({
      error: 'invalid_request',
    });
    expect(errorOf(() => presentedClient('Bearer x', {}))).toMatchObject({
      error: 'invalid_client',
      errorCode: 'invalid_credentials',
      status: 401,
    });
    expect(errorOf(() => presentedClient(`Basic ${Buffer.from('no-colon').toString('base64')}`, {}))).toMatchObject({
      error: 'invalid_client',
    });
    expect(errorOf(() => presentedClient(undefined, {}))).toMatchObject({ error: 'invalid_client', status: 401 });
  });

  it('tells Basic credentials that are not base64 from another scheme', () => {
    expect(errorOf(() => presentedClient('Basic !!!', {}))).toMatchObject({
      error: 'invalid_client',
      message: 'Malformed Basic credentials',
      status: 401,
    });
    expect(errorOf(() => presentedClient('Bearer x', {}))).toMatchObject({
      message: 'The Authorization header must use the Basic scheme',
    });
  });
});
