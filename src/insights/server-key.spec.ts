import { serverKeyOf } from './telemetry-sampler.service';

describe('server keys', () => {
  it('name a data-plane server by host, port and admin database, never its credentials', () => {
    expect(serverKeyOf('postgres://admin:s3cret@10.0.0.5:5433/postgres')).toBe('10.0.0.5:5433/postgres');
    expect(serverKeyOf('postgresql://admin@db.example/admin')).toBe('db.example:5432/admin');
    expect(serverKeyOf('postgres://u:p@h:5432/x?sslmode=require')).not.toMatch(/u:p|sslmode/);
  });
});
