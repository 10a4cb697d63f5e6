import { CheckDuration } from './check-duration';

describe('CheckDuration', () => {
  it('knows nothing before a check at today’s parameters was seen', () => {
    expect(new CheckDuration().remaining(5)).toBeUndefined();
  });

  it('answers what is left of the average check, never less than nothing', () => {
    const checks = new CheckDuration();
    checks.record(400);
    expect(checks.remaining(50)).toBe(350);
    expect(checks.remaining(500)).toBe(0);
  });

  it('follows the checks as they change, without one slow check dominating', () => {
    const checks = new CheckDuration();
    checks.record(400);
    checks.record(900);
    expect(checks.remaining(0)).toBe(500);
    for (let i = 0; i < 30; i++) checks.record(300);
    expect(checks.remaining(0)).toBeCloseTo(300, 0);
  });
});
