import type { ArgumentsHost } from '@nestjs/common';
import { QueryFailedError } from 'typeorm';
import { AllExceptionsFilter } from './all-exceptions.filter';

/** What the filter answers for `exception`: status, headers and body. */
function answer(exception: unknown) {
  const sent = { status: 0, headers: {} as Record<string, string>, body: undefined as unknown };
  const res = {
    headersSent: false,
    setHeader: (name: string, value: string) => (sent.headers[name] = value),
    status(code: number) {
      sent.status = code;
      return this;
    },
    json: (body: unknown) => (sent.body = body),
  };
  const req = { method: 'POST', path: '/workspaces/w/databases' };
  const host = {
    getType: () => 'http',
    switchToHttp: () => ({ getResponse: () => res, getRequest: () => req }),
  } as unknown as ArgumentsHost;
  new AllExceptionsFilter().catch(exception, host);
  return sent;
}

const failedQuery = (code: string) =>
  new QueryFailedError('UPDATE databases SET …', [], Object.assign(new Error('pg'), { code }));

describe('the error body of a failed metadata statement', () => {
  it('asks for a retry (503, Retry-After) after a serialization failure, a deadlock or a cancelled statement', () => {
    for (const code of ['40001', '40P01', '57014']) {
      expect(answer(failedQuery(code))).toEqual({
        status: 503,
        headers: { 'Retry-After': '1' },
        body: {
          errorCode: 'server_error',
          message: 'The request met concurrent work and was rolled back; retry it',
          statusCode: 503,
        },
      });
    }
  });

  it('is still a 500 for what is not foreseeable', () => {
    expect(answer(failedQuery('42P01'))).toMatchObject({ status: 500, body: { errorCode: 'internal_error' } });
  });
});
