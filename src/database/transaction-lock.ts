import type { EntityManager } from 'typeorm';

/**
 * Takes a PostgreSQL advisory lock named by `key` for the rest of the caller's transaction: work
 * under the same key, in any process, takes turns. Released at commit or rollback.
 */
export async function lockForTransaction(manager: EntityManager, key: string): Promise<void> {
  await manager.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [key]);
}
