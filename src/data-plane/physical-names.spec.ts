import { assertCredentialRoleName, ownerRoleName, physicalDatabaseName } from './physical-names';

describe('physical names on the data plane', () => {
  it('derives the database name from the id, not from anything a user typed', () => {
    expect(physicalDatabaseName('cp_', '0B6F1C2A-1111-4a2b-9c3d-0123456789ab')).toBe(
      'cp_0b6f1c2a11114a2b9c3d0123456789ab',
    );
    expect(ownerRoleName('cp_0b6f1c2a11114a2b9c3d0123456789ab')).toBe('cp_0b6f1c2a11114a2b9c3d0123456789ab_owner');
  });

  it('fits PostgreSQL identifiers (63 bytes) with the longest allowed prefix', () => {
    const physical = physicalDatabaseName('p'.repeat(20), '0b6f1c2a-1111-4a2b-9c3d-0123456789ab');
    expect(ownerRoleName(physical).length).toBeLessThanOrEqual(63);
  });

  it('refuses anything that is not a plain identifier', () => {
    expect(() => physicalDatabaseName('cp_', 'x"; DROP DATABASE postgres; --')).toThrow();
    expect(() => ownerRoleName('Robert"); DROP')).toThrow();
    expect(() => assertCredentialRoleName("postgres' OR 1=1")).toThrow();
    expect(assertCredentialRoleName('0b6f1c2a-1111-4a2b-9c3d-0123456789ab')).toBe(
      '0b6f1c2a-1111-4a2b-9c3d-0123456789ab',
    );
  });
});
