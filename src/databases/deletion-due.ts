import type { DatabaseEntity } from './database.entity';

/**
 * When a deleted database's deletion is (or was) due: the end of its grace period, recorded when the
 * delete was accepted (a row deleted without one recorded is due at once). Null while it is live.
 * Its compute is billed up to this moment however late the finalization comes (a data plane out of
 * reach): the customer asked for the deletion, the grace period is all they pay for.
 */
export function deletionDueOf(database: Pick<DatabaseEntity, 'deleted' | 'deletionDueAt'>): Date | null {
  return database.deleted ? (database.deletionDueAt ?? database.deleted) : null;
}
