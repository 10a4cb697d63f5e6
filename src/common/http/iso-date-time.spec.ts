import { isIsoDateTime } from './iso-date-time';

describe('ISO 8601 date-times', () => {
  it('accept a full date-time with a time zone', () => {
    for (const ok of [
      '2025-03-01T12:00:00Z',
      '2025-03-01T12:00Z',
      '2025-03-01T12:00:00.123+01:00',
      '2025-03-01T12:00:00-0500',
    ])
      expect(isIsoDateTime(ok)).toBe(true);
  });

  it('refuse dates alone, local times, impossible dates and moments before 1970', () => {
    for (const bad of [
      '2025-03-01',
      '2025-03-01T12:00:00',
      '2025-02-30T00:00:00Z',
      '2025-03-01T25:00:00Z',
      '0000-01-01T00:00:00Z',
      '1969-12-31T23:59:59Z',
      'yesterday',
      1700000000000,
    ])
      expect(isIsoDateTime(bad)).toBe(false);
  });
});
