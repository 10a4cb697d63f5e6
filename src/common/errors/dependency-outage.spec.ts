import { QueryFailedError } from 'typeorm';
import { isDependencyOutage } from './dependency-outage';

function pgError(code: string, message = 'pg'): Error {
  return Object.assign(new Error(message), { code });
}

describe('what counts as a dependency outage (503), not a bad request', () => {
  it('recognises unreachable servers, lost connections and databases refusing connections', () => {
    for (const err of [
      pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'),
      pgError('55000', 'database "control_plane" is not currently accepting connections'),
      pgError('57P01', 'terminating connection due to administrator command'),
      pgError('57P03', 'the database system is starting up'),
      pgError('53300', 'sorry, too many clients already'),
      pgError('08006', 'connection failure'),
      new Error('timeout exceeded when trying to connect'),
      new Error('Connection terminated unexpectedly'),
      new Error('Connection is closed.'),
      new QueryFailedError('SELECT 1', [], pgError('57P01')),
    ]) {
      expect({ message: err.message, outage: isDependencyOutage(err) }).toEqual({ message: err.message, outage: true });
    }
  });

  it('leaves request and programming errors alone', () => {
    for (const err of [
      new QueryFailedError('INSERT', [], pgError('23505')),
      new QueryFailedError('SELECT', [], pgError('22P02')),
      pgError('ERR_INVALID_ARG_TYPE'),
      new TypeError('x is undefined'),
      'a string',
      null,
    ]) {
      expect(isDependencyOutage(err)).toBe(false);
    }
  });
});
