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

  it('refuse moments after 9999-12-31T23:59:59.999Z, which no RFC 3339 date-time can be written back as', () => {
    expect(isIsoDateTime('9999-12-31T23:59:59.999Z')).toBe(true);
    // 9999-12-31T23:59 at -14:00 is 10000-01-01T13:59Z: answered as "+010000-…" before.
    expect(isIsoDateTime('9999-12-31T23:59:00-14:00')).toBe(false);
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
