/**
 * The startup setting of every admin session in a customer database: the tenant owns that
 * database's `public` schema, and a function or operator of theirs there that the admin's
 * statements resolved to would run with the admin's rights. As a startup option no setting of the
 * database or a role can change it.
 */
const TENANT_SAFE_SEARCH_PATH = '-c search_path=pg_catalog,pg_temp';

/**
 * The connection settings of an admin session in a customer database at `connectionString`: the
 * URL without its `options` (pg would let them replace the ones given apart), and those options
 * followed by the safe search path (the last setting of a name wins).
 */
export function tenantDatabaseConnection(connectionString: string): { connectionString: string; options: string } {
  const url = new URL(connectionString);
  const given = url.searchParams.get('options')?.trim();
  url.searchParams.delete('options');
  return {
    connectionString: url.toString(),
    options: given ? `${given} ${TENANT_SAFE_SEARCH_PATH}` : TENANT_SAFE_SEARCH_PATH,
  };
}
