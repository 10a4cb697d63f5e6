import { databaseNameProblem } from './database-name';

describe('database name rules', () => {
  it.each(['a', '_', 'my_spectacular_db', 'Db2', '_9', 'A'.repeat(63)])('accepts %j', (name) => {
    expect(databaseNameProblem(name)).toBeNull();
  });

  it.each([
    ['', 'must not be empty'],
    ['a'.repeat(64), 'must be fewer than 64 characters'],
    ['1db', 'must begin with a letter or an underscore'],
    ['-db', 'must begin with a letter or an underscore'],
    ['my-db', 'may contain only letters, digits and underscores'],
    ['my db', 'may contain only letters, digits and underscores'],
    ['café', 'may contain only letters, digits and underscores'],
    ['x"; DROP DATABASE postgres; --', 'may contain only letters, digits and underscores'],
    ["a'); DROP ROLE postgres; --", 'may contain only letters, digits and underscores'],
  ])('refuses %j: %s', (name, problem) => {
    expect(databaseNameProblem(name)).toBe(problem);
  });

  it('refuses anything that is not a string', () => {
    expect(databaseNameProblem(42)).toBe('must be a string');
    expect(databaseNameProblem(null)).toBe('must be a string');
  });
});
