import type { EntityManager } from 'typeorm';
import type { MetadataTransactions } from './metadata-transactions';

/**
 * Takes PostgreSQL advisory locks named by `keys`, in the order given, for the rest of the caller's
 * transaction: work under the same key, in any process, takes turns. Released at commit or rollback.
 * Several keys go in one statement (one round trip; PostgreSQL evaluates a select list left to right):
 * callers that take more than one always name them in the same order, so they never deadlock.
 */
export async function lockForTransaction(manager: EntityManager, ...keys: string[]): Promise<void> {
  const locks = keys.map((_, i) => `pg_advisory_xact_lock(hashtextextended($${i + 1}, 0))`);
  await manager.query(`SELECT ${locks.join(', ')}`, keys);
}

/**
 * The same locks, taken in the transaction the context carries (MetadataTransactions). Refuses to run
 * outside one: a transaction-scoped lock taken by a lone statement would be released at once.
 */
export async function lockForContextTransaction(txHost: MetadataTransactions, ...keys: string[]): Promise<void> {
  await lockForTransaction(txHost.required(`advisory lock ${keys.join(', ')}`), ...keys);
}
