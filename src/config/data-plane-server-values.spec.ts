import { isPublicHost, MAX_SERVER_DATABASES, serverCapacityOf } from './data-plane-server-values';

/** The rules shared by the environment (DATA_PLANE_PUBLIC_HOST*, DATA_PLANE_MAX_DATABASES) and the CLI. */
describe('a data-plane server public host', () => {
  it('is HOST, HOST:PORT, [IPv6] or [IPv6]:PORT', () => {
    for (const host of [
      'db.example.com',
      'db.example.com:6432',
      '10.0.0.5:5432',
      '[::1]',
      '[2001:db8::1]:5432',
      // A Docker Compose service name, as the admin URL's host may already be.
      'data_plane:5432',
    ])
      expect({ host, ok: isPublicHost(host) }).toEqual({ host, ok: true });
  });

  it('is not a URL, a host with a path or user, a port out of 1-65535, or blank', () => {
    for (const host of [
      'postgres://db.example.com:notaport',
      'postgres://db.example.com:5432',
      'db.example.com:notaport',
      'db.example.com:',
      'db.example.com:0',
      'db.example.com:65536',
      'db.example.com:99999',
      'db.example.com/postgres',
      'user@db.example.com',
      '::1',
      '[::1',
      '',
      ' ',
      ' db.example.com',
    ])
      expect({ host, ok: isPublicHost(host) }).toEqual({ host, ok: false });
  });
});

describe('a data-plane server capacity (max_databases)', () => {
  it('is a whole number in decimal from 1 to the int4 maximum of its column', () => {
    expect(MAX_SERVER_DATABASES).toBe(2147483647);
    expect(serverCapacityOf('1')).toBe(1);
    expect(serverCapacityOf('1000')).toBe(1000);
    expect(serverCapacityOf('2147483647')).toBe(2147483647);
  });

  it('is not beyond int4 (PostgreSQL would refuse the row), zero, negative, fractional, hex or blank', () => {
    for (const text of ['2147483648', '3000000000', '0', '-1', '1.5', '0x10', '1e3', '', ' ', 'many'])
      expect({ text, capacity: serverCapacityOf(text) }).toEqual({ text, capacity: undefined });
  });
});
