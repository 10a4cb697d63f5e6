import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexIfNotExists } from '../database/index-if-not-exists';

/**
 * Instant databases: the cap on unclaimed ones and failed attempts.
 *
 * - The codes still unclaimed, by expiry: every provision counts the live ones
 *   (INSTANT_DATABASES_MAX_UNCLAIMED) under the admissions' lock, and claims are kept for ever (most
 *   are never claimed), so without it that count read every code ever handed out. As in
 *   HistoryIndexes, `IF NOT EXISTS` lets an operator with a big table build it beforehand with
 *   `CREATE INDEX CONCURRENTLY` under the same name and definition.
 * - `failed_at`: a provision that fails once its database is made deletes that database at once
 *   and expires its code; the attempt stops counting against its client address.
 *
 * Existing rows are brought to that state: the attempts the previous release left behind would
 * otherwise take places under the new cap until their codes expire (up to a day) and, for the
 * second kind, hold a database on a server meanwhile. Neither code was ever shown to anyone (their
 * request failed), so nothing anyone can claim changes.
 * - A code whose build failed: its database was deleted at once, the code left live.
 * - A code whose credential failed: its READY database left live in the holding workspace with no
 *   working credential. Only those older than an hour, so a provision in flight on a replica of the
 *   previous release (its credential still pending) is never taken for one; the deletion is due now
 *   and the reconciler's pass finalizes it.
 * - A code with no database at all, over an hour old: its create failed (a region full, the metadata
 *   database failing) and the code was left live; it is expired (still counting against its address).
 */
export class InstantDatabaseClaimLimits1795800000006 implements MigrationInterface {
  name = 'InstantDatabaseClaimLimits1795800000006';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "database_claims" ADD "failed_at" TIMESTAMP WITH TIME ZONE
        `);
    await createIndexIfNotExists(
      queryRunner,
      `
            CREATE INDEX IF NOT EXISTS "IDX_database_claims_unclaimed_by_expiry" ON "database_claims" ("expires_at")
            WHERE "claimed_at" IS NULL
        `,
    );
    await queryRunner.query(`
            UPDATE "databases" d SET "deleted" = now(), "deletion_due_at" = now(), "updated" = now()
              FROM "database_claims" c, "workspaces" w
             WHERE c."database_id" = d."id" AND w."id" = d."workspace_id" AND w."slug" = '~unclaimed'
               AND c."claimed_at" IS NULL AND c."expires_at" > now()
               AND d."deleted" IS NULL AND d."status" = 'READY' AND d."created" < now() - interval '1 hour'
               AND NOT EXISTS (
                     SELECT 1 FROM "credentials" k
                      WHERE k."database_id" = d."id" AND NOT k."pending" AND k."dropped" IS NULL
                        AND (k."expires_at" IS NULL OR k."expires_at" > now()))
        `);
    await queryRunner.query(`
            UPDATE "database_claims" c SET "failed_at" = d."deleted", "expires_at" = LEAST(c."expires_at", d."deleted")
              FROM "databases" d
             WHERE d."id" = c."database_id" AND d."deleted" IS NOT NULL
               AND c."claimed_at" IS NULL AND c."expires_at" > d."deleted"
        `);
    await queryRunner.query(`
            UPDATE "database_claims" SET "expires_at" = now()
             WHERE "database_id" IS NULL AND "claimed_at" IS NULL AND "expires_at" > now()
               AND "created" < now() - interval '1 hour'
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            DROP INDEX "public"."IDX_database_claims_unclaimed_by_expiry"
        `);
    await queryRunner.query(`
            ALTER TABLE "database_claims" DROP COLUMN "failed_at"
        `);
  }
}
