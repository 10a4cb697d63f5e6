/**
 * The resource envelope dedicated compute gives a database on its data-plane server. There are no
 * virtual machines: an instance's size is the number of sessions the database accepts at once
 * (`pg_database.datconnlimit`). Every running instance adds its size's connections; a database
 * without any falls back to PostgreSQL's default, no limit of its own (-1).
 */
export const NO_CONNECTION_LIMIT = -1;

export function connectionLimitFor(instanceLimits: readonly number[]): number {
  if (!instanceLimits.length) return NO_CONNECTION_LIMIT;
  return instanceLimits.reduce((sum, limit) => sum + limit, 0);
}
