import { connectionLimitFor } from './connection-envelope';

describe('connectionLimitFor (the envelope a database gets, dedicated compute on top of the default)', () => {
  it('leaves a database without instances at the default limit', () => {
    expect(connectionLimitFor(20, [])).toBe(20);
  });

  it('adds up the connections of every running instance on top of the default', () => {
    expect(connectionLimitFor(20, [50])).toBe(20 + 50);
    expect(connectionLimitFor(20, [50, 100, 400])).toBe(20 + 550);
  });
});
