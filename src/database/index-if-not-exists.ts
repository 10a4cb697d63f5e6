import type { QueryRunner } from 'typeorm';

/**
 * Runs a `CREATE [UNIQUE] INDEX IF NOT EXISTS "name" …` of a migration. `IF NOT EXISTS` lets an
 * operator with a big table build the index beforehand with `CREATE INDEX CONCURRENTLY` under the same
 * name; but such a build that failed or was cancelled leaves an INVALID index of that name, which
 * `IF NOT EXISTS` would keep, and the reads it is for would scan the table for good. An invalid
 * index of that name is dropped first, so the migration builds it.
 */
export async function createIndexIfNotExists(queryRunner: QueryRunner, sql: string): Promise<void> {
  const name = /INDEX IF NOT EXISTS "([^"]+)"/.exec(sql)?.[1];
  if (!name) throw new Error(`not a CREATE INDEX IF NOT EXISTS "name": ${sql}`);
  const invalid = (await queryRunner.query(
    `SELECT 1 FROM pg_index WHERE indexrelid = to_regclass($1) AND NOT indisvalid`,
    [`"${name}"`],
  )) as unknown[];
  if (invalid.length) await queryRunner.query(`DROP INDEX "${name}"`);
  await queryRunner.query(sql);
}
