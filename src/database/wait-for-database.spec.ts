import { isUnreachable, untilReachable } from './wait-for-database';

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
const starting = () => Object.assign(new Error('the database system is starting up'), { code: '57P03' });
const badPassword = () => Object.assign(new Error('password authentication failed'), { code: '28P01' });

/** A clock that advances only when the code under test sleeps. */
function fakeClock() {
  let t = 0;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => t,
    sleep: (ms: number) => {
      sleeps.push(ms);
      t += ms;
      return Promise.resolve();
    },
  };
}

describe('waiting for the metadata database at boot', () => {
  it('retries while the server refuses connections or is starting up, then returns the answer', async () => {
    const clock = fakeClock();
    const failures = [refused(), starting(), refused()];
    let calls = 0;
    const result = await untilReachable(
      () => {
        calls++;
        const failure = failures.shift();
        return failure ? Promise.reject(failure) : Promise.resolve('migrated');
      },
      { waitMs: 60000, ...clock },
    );
    expect(result).toBe('migrated');
    expect(calls).toBe(4);
    expect(clock.sleeps).toEqual([500, 1000, 2000]);
  });

  it('gives up after the bound with the last error', async () => {
    const clock = fakeClock();
    const retries: number[] = [];
    await expect(
      untilReachable(() => Promise.reject(refused()), {
        waitMs: 10000,
        ...clock,
        onRetry: (_err, ms) => retries.push(ms),
      }),
    ).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    // 0.5 + 1 + 2 + 4 s, then the 2.5 s left, then no time is left.
    expect(clock.sleeps).toEqual([500, 1000, 2000, 4000, 2500]);
    expect(retries).toEqual(clock.sleeps);
  });

  it('does not wait for a server that answered and refused (a wrong password is not an outage)', async () => {
    const clock = fakeClock();
    await expect(
      untilReachable(() => Promise.reject(badPassword()), { waitMs: 60000, ...clock }),
    ).rejects.toMatchObject({
      code: '28P01',
    });
    expect(clock.sleeps).toEqual([]);
  });

  it('retries what `retryOn` names instead, and nothing else', async () => {
    const clock = fakeClock();
    const ended = () => Object.assign(new Error('terminating connection'), { code: '57P01' });
    const failures = [ended(), ended()];
    const result = await untilReachable(
      () => {
        const failure = failures.shift();
        return failure ? Promise.reject(failure) : Promise.resolve('recorded');
      },
      { waitMs: 60000, retryOn: (err) => (err as { code?: string }).code === '57P01', ...clock },
    );
    expect(result).toBe('recorded');
    expect(clock.sleeps).toEqual([500, 1000]);
    await expect(
      untilReachable(() => Promise.reject(refused()), { waitMs: 60000, retryOn: () => false, ...clock }),
    ).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(clock.sleeps).toEqual([500, 1000]);
  });

  it('tries once when the bound is 0', async () => {
    const clock = fakeClock();
    await expect(untilReachable(() => Promise.reject(refused()), { waitMs: 0, ...clock })).rejects.toThrow(
      'ECONNREFUSED',
    );
    expect(clock.sleeps).toEqual([]);
  });

  it('counts a name that does not resolve yet and a cut connection as unreachable', () => {
    expect(isUnreachable(Object.assign(new Error('getaddrinfo ENOTFOUND postgres'), { code: 'ENOTFOUND' }))).toBe(true);
    expect(isUnreachable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isUnreachable(new AggregateError([refused(), refused()]))).toBe(true);
    expect(isUnreachable(badPassword())).toBe(false);
    expect(isUnreachable(new Error('relation "x" does not exist'))).toBe(false);
  });
});
