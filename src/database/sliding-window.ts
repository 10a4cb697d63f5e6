import type { EntityManager } from 'typeorm';

/**
 * SQL for the limits counted over a sliding window of records (invite e-mails, subscription rows,
 * compute changes): how long until one more may be recorded, and the pruning of records that left the
 * window. Table and column names are the caller's constants; values go in as placeholders.
 */

/**
 * A scalar subquery: seconds (at least 1) until one more row may be recorded, or null while fewer than
 * `limit` rows of `table` that `where` selects have `at` within the last `window` seconds. Otherwise
 * the wait ends when the limit-th most recent of them leaves the window. `limit` and `window` are SQL
 * (placeholders); an index on (the columns of `where`, `at`) makes it read at most `limit` entries.
 * `limit` is read as a bigint: a placeholder there would be typed int4, and a limit above 2^31 - 1
 * (the configuration takes any safe integer) failed every request it governs.
 */
export function windowWaitSql(o: { table: string; at: string; where: string; limit: string; window: string }): string {
  return `(SELECT greatest(1, ceil(extract(epoch FROM ${o.at} + make_interval(secs => ${o.window}) - now())))::int
             FROM ${o.table}
            WHERE ${o.where} AND ${o.at} > now() - make_interval(secs => ${o.window})
            ORDER BY ${o.at} DESC OFFSET (${o.limit})::bigint - 1 LIMIT 1)`;
}

/**
 * Runs windowWaitSql for the rows of `table` whose `keyColumn` is `key` (through `manager`, the
 * context's transaction where the caller holds the lock that serializes the records it counts).
 */
export async function windowWait(
  manager: EntityManager,
  of: { table: string; at: string; keyColumn: string },
  key: string,
  limit: number,
  windowSeconds: number,
): Promise<number | null> {
  const wait = windowWaitSql({ table: of.table, at: of.at, where: `${of.keyColumn} = $1`, limit: '$2', window: '$3' });
  const [row] = await manager.query<{ wait: number | null }[]>(`SELECT ${wait} AS wait`, [key, limit, windowSeconds]);
  return row.wait;
}

/**
 * Deletes up to `take` rows of `table` whose `created` is `windowSeconds` old or more, oldest first, in
 * one statement (rows another transaction holds skipped, not waited for); how many it deleted (see
 * pruneInBatches).
 */
export async function pruneOlderThan(
  manager: EntityManager,
  table: string,
  windowSeconds: number,
  take: number,
): Promise<number> {
  const [, deleted] = await manager.query<[unknown[], number]>(
    `DELETE FROM ${table}
      WHERE id = ANY(ARRAY(SELECT id FROM ${table} WHERE created <= now() - make_interval(secs => $1)
                           ORDER BY created LIMIT $2 FOR UPDATE SKIP LOCKED))`,
    [windowSeconds, take],
  );
  return deleted;
}
