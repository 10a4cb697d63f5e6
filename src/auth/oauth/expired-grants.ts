import type { EntityManager } from 'typeorm';

/** The moment before which grants expired long enough to be deleted (OAUTH_EXPIRED_RETENTION_DAYS). */
export function pruneCutoff(now: Date, retentionDays: number): Date {
  return new Date(now.getTime() - retentionDays * 86_400_000);
}

/**
 * Deletes up to `take` rows of `table` (keyed by `key`) that expired before `cutoff`, the longest
 * expired first, in one statement: the keys from the table's `expires_at` index, rows another
 * transaction holds skipped rather than waited for, then each row by its key (`= ANY(ARRAY(…))` keeps
 * the planner from hashing the whole table against them); how many it deleted.
 */
export async function deleteExpiredRows(
  manager: EntityManager,
  table: 'oauth_refresh_tokens' | 'oauth_authorization_codes',
  key: 'id' | 'code_hash',
  cutoff: Date,
  take: number,
): Promise<number> {
  const [, deleted]: [unknown[], number] = await manager.query(
    `DELETE FROM ${table}
      WHERE ${key} = ANY(ARRAY(SELECT ${key} FROM ${table} WHERE expires_at < $1
                               ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
    [cutoff, take],
  );
  return deleted;
}
