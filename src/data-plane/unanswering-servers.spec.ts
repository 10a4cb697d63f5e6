import { Logger } from '@nestjs/common';
import { Pool } from 'pg';
import { DataPlaneError, isDatabaseFull, isUnavailability } from './data-plane.service';
import { UnansweringServers } from './unanswering-servers';

/** PostgreSQL's errors as pg reports them: an Error with the SQLSTATE in `code`. */
function pgError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('one database at its connection limit is not its server failing to answer', () => {
  const databaseFull = pgError('53300', 'too many connections for database "t_0123456789abcdef"');
  const serverFull = pgError('53300', 'sorry, too many clients already');

  it('tells a database at its own CONNECTION LIMIT from a server out of connections', () => {
    expect(isDatabaseFull(databaseFull)).toBe(true);
    expect(isDatabaseFull(serverFull)).toBe(false);
    expect(isDatabaseFull(pgError('53300', 'too many connections for role "r"'))).toBe(false);
    // Both are still unavailability for the caller: 503, retry later.
    expect(isUnavailability(databaseFull)).toBe(true);
    expect(isUnavailability(serverFull)).toBe(true);
  });

  it('lets a sweep go on with the server after one of its databases refused a session, and stop after the server did', () => {
    const sweep = new UnansweringServers(new Logger('test'), 'credential work');
    sweep.note('s1', new DataPlaneError('AWS_US_WEST_2', 's1', true, databaseFull));
    expect(sweep.skip('s1')).toBe(false);
    sweep.note('s1', new DataPlaneError('AWS_US_WEST_2', 's1', true, serverFull));
    expect(sweep.skip('s1')).toBe(true);
  });
});

describe("a process's own admin pool being busy is not its server failing to answer", () => {
  it('takes a wait for one of its own pooled connections that runs out as 503 for the caller, but the server as answering', async () => {
    // pg-pool's own error, from a real pool whose one connection is taken. The timeout bounds
    // making the first connection too, so it is long enough for a loaded machine (100 ms was not).
    const pool = new Pool({
      connectionString: 'postgres://postgres@127.0.0.1:5432/postgres',
      max: 1,
      connectionTimeoutMillis: 2_000,
    });
    const taken = await pool.connect();
    let busy: unknown;
    try {
      await pool.connect();
    } catch (err) {
      busy = err;
    } finally {
      taken.release();
      await pool.end();
    }
    expect(busy).toBeInstanceOf(Error);
    const failure = new DataPlaneError('AWS_US_WEST_2', 's1', isUnavailability(busy), busy);
    expect(failure.unavailable).toBe(true);
    expect(failure.serverUnanswered).toBe(false);

    // A connection that could not be made in time is the server's.
    const timedOut = new Error('Connection terminated due to connection timeout');
    expect(new DataPlaneError('AWS_US_WEST_2', 's1', isUnavailability(timedOut), timedOut).serverUnanswered).toBe(true);
  });
});
