import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The codes of instant databases still unclaimed, by expiry: every provision counts the live ones
 * (INSTANT_DATABASES_MAX_UNCLAIMED) under the admissions' lock, and claims are kept for ever (most
 * are never claimed), so without it that count read every code ever handed out. Existing rows are
 * indexed as they are: nothing else changes.
 *
 * As in HistoryIndexes, `IF NOT EXISTS` lets an operator with a big table build it beforehand with
 * `CREATE INDEX CONCURRENTLY` under the same name and definition.
 */
export class InstantDatabaseClaimLimits1795800000006 implements MigrationInterface {
  name = 'InstantDatabaseClaimLimits1795800000006';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE INDEX IF NOT EXISTS "IDX_database_claims_unclaimed_by_expiry" ON "database_claims" ("expires_at")
            WHERE "claimed_at" IS NULL
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            DROP INDEX "public"."IDX_database_claims_unclaimed_by_expiry"
        `);
  }
}
