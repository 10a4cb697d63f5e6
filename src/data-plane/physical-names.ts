/**
 * Names of things on a data-plane server. They are derived from ids, never from what a user typed,
 * and checked against a strict pattern before any SQL is built (and still escaped in the SQL).
 */
const PHYSICAL = /^[a-z][a-z0-9_]{0,56}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** `${prefix}${id without hyphens}`: unique per database, unrelated to its logical name. */
export function physicalDatabaseName(prefix: string, id: string): string {
  const name = `${prefix}${id.replace(/-/g, '').toLowerCase()}`;
  return assertPhysicalName(name);
}

/** The NOLOGIN role that owns a physical database and everything in it; credential roles are its members. */
export function ownerRoleName(physical: string): string {
  return `${assertPhysicalName(physical)}_owner`;
}

/**
 * The NOLOGIN role that owns every customer database of this deployment on a server (the DATABASE
 * object only: what is in it belongs to each database's owner role). Credentials are members of
 * their owner role, never of this one, so they cannot ALTER their database (its CONNECTION LIMIT,
 * the compute envelope, above all). Not of the physical-name shape `${prefix}<32 hex>`.
 */
export function holderRoleName(prefix: string): string {
  return assertPhysicalName(`${prefix}databases`);
}

export function assertPhysicalName(name: string): string {
  if (!PHYSICAL.test(name)) throw new Error(`not a physical database name: ${JSON.stringify(name)}`);
  return name;
}

/** Credential roles are named by the credential's id (a UUID), which is also the login user name. */
export function isCredentialRoleName(name: string): boolean {
  return UUID.test(name);
}

export function assertCredentialRoleName(name: string): string {
  if (!isCredentialRoleName(name)) throw new Error(`not a credential role name: ${JSON.stringify(name)}`);
  return name;
}
