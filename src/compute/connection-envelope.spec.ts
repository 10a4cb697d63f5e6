import { connectionLimitFor, NO_CONNECTION_LIMIT } from './connection-envelope';

describe('connectionLimitFor (the envelope dedicated compute gives a database)', () => {
  it('leaves a database without instances at no limit of its own (-1)', () => {
    expect(connectionLimitFor([])).toBe(NO_CONNECTION_LIMIT);
    expect(NO_CONNECTION_LIMIT).toBe(-1);
  });

  it('adds up the connections of every running instance', () => {
    expect(connectionLimitFor([50])).toBe(50);
    expect(connectionLimitFor([50, 100, 400])).toBe(550);
  });
});
