/**
 * The resource envelope a database gets on its data-plane server. There are no virtual machines:
 * an instance's size is the number of sessions the database accepts at once
 * (`pg_database.datconnlimit`). Every database starts from the shared default
 * (DATA_PLANE_DEFAULT_CONNECTION_LIMIT), so no tenant can take every connection of a shared server;
 * every running dedicated compute instance adds its size's connections on top.
 */
export function connectionLimitFor(base: number, instanceLimits: readonly number[]): number {
  return instanceLimits.reduce((sum, limit) => sum + limit, base);
}
