import { QueryFailedError } from 'typeorm';
import { isDependencyOutage } from './dependency-outage';

const pgError = (fields: Record<string, string>) => Object.assign(new Error(fields.message ?? 'pg error'), fields);

describe('isDependencyOutage', () => {
  it('recognizes a database that refuses connections, is shutting down or cannot be reached', () => {
    expect(
      isDependencyOutage(
        pgError({ code: '55000', severity: 'FATAL', message: 'database "x" is not currently accepting connections' }),
      ),
    ).toBe(true);
    expect(isDependencyOutage(pgError({ code: '57P01', severity: 'FATAL' }))).toBe(true);
    expect(isDependencyOutage(pgError({ code: '57P03', severity: 'FATAL' }))).toBe(true);
    expect(isDependencyOutage(pgError({ code: '53300', severity: 'FATAL' }))).toBe(true);
    expect(isDependencyOutage(pgError({ code: '08006', severity: 'ERROR' }))).toBe(true);
    // A standby, or a database read-only by default: it answers and takes no write.
    expect(
      isDependencyOutage(
        pgError({ code: '25006', severity: 'ERROR', message: 'cannot execute INSERT in a read-only transaction' }),
      ),
    ).toBe(true);
    expect(
      isDependencyOutage(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })),
    ).toBe(true);
    expect(isDependencyOutage(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isDependencyOutage(new Error('timeout exceeded when trying to connect'))).toBe(true);
  });

  it('looks inside TypeORM query errors and error causes', () => {
    const wrapped = new QueryFailedError('SELECT 1', [], pgError({ code: '57P01', severity: 'FATAL' }));
    expect(isDependencyOutage(wrapped)).toBe(true);
    expect(isDependencyOutage(new Error('outer', { cause: new Error('Connection terminated') }))).toBe(true);
  });

  it('leaves errors about the request or the code alone', () => {
    expect(isDependencyOutage(pgError({ code: '23505', severity: 'ERROR' }))).toBe(false);
    expect(isDependencyOutage(pgError({ code: '22P02', severity: 'ERROR' }))).toBe(false);
    expect(isDependencyOutage(new QueryFailedError('SELECT', [], pgError({ code: '42P01', severity: 'ERROR' })))).toBe(
      false,
    );
    expect(isDependencyOutage(new TypeError('x is undefined'))).toBe(false);
    expect(isDependencyOutage(new Error('Connection terminated by a typo in the message text'))).toBe(false);
    expect(isDependencyOutage(undefined)).toBe(false);
    expect(isDependencyOutage('ECONNREFUSED')).toBe(false);
  });
});
