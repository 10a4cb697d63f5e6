import type { EntityManager } from 'typeorm';
import type { MetadataTransactions } from './metadata-transactions';

/**
 * Takes a PostgreSQL advisory lock named by `key` for the rest of the caller's transaction: work
 * under the same key, in any process, takes turns. Released at commit or rollback.
 */
export async function lockForTransaction(manager: EntityManager, key: string): Promise<void> {
  await manager.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [key]);
}

/**
 * The same lock, taken in the transaction the context carries (MetadataTransactions). Refuses to run
 * outside one: a transaction-scoped lock taken by a lone statement would be released at once.
 */
export async function lockForContextTransaction(txHost: MetadataTransactions, key: string): Promise<void> {
  await lockForTransaction(txHost.required(`advisory lock ${key}`), key);
}
