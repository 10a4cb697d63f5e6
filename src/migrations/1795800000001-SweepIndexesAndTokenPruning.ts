import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexIfNotExists } from '../database/index-if-not-exists';

/**
 * Indexes for the reconciler's periodic reads, each partial on the work still owed so a pass reads
 * that work and not the history (tombstones, dropped credentials, sent invites, settled instances):
 * due credential expiries and stuck pending creates, due database deletions and unbuilt databases,
 * unsettled compute instances, invites owed an e-mail. The full indexes on `credentials.expires_at`
 * and `databases.deletion_due_at` go: every dropped credential and every finalized database stays in
 * them with a time long past, so the sweeps' range scans read all of history; their partial
 * replacements serve every query that used them. And `expires_at` of the OAuth refresh tokens and
 * authorization codes, for the pruning of expired ones.
 *
 * Each CREATE takes its table's SHARE lock (writes wait) until the migration commits, so the biggest
 * table (oauth_refresh_tokens) goes first and the drops (ACCESS EXCLUSIVE) last. `IF NOT EXISTS` lets
 * an operator with big tables build them beforehand with `CREATE INDEX CONCURRENTLY` under the same
 * names and definitions (a failed concurrent build leaves an invalid index: drop it and build again).
 */
export class SweepIndexesAndTokenPruning1795800000001 implements MigrationInterface {
  name = 'SweepIndexesAndTokenPruning1795800000001';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await createIndexIfNotExists(
      queryRunner,
      `
            CREATE INDEX IF NOT EXISTS "IDX_oauth_refresh_tokens_expires_at" ON "oauth_refresh_tokens" ("expires_at")
        `,
    );
    await createIndexIfNotExists(
      queryRunner,
      `
            CREATE INDEX IF NOT EXISTS "IDX_oauth_authorization_codes_expires_at" ON "oauth_authorization_codes" ("expires_at")
        `,
    );
    await createIndexIfNotExists(
      queryRunner,
      `
            CREATE INDEX IF NOT EXISTS "IDX_credentials_expiry_due" ON "credentials" ("expires_at")
            WHERE "dropped" IS NULL AND "expires_at" IS NOT NULL
        `,
    );
    await createIndexIfNotExists(
      queryRunner,
      `
            CREATE INDEX IF NOT EXISTS "IDX_credentials_pending_by_created" ON "credentials" ("created")
            WHERE "pending" AND "dropped" IS NULL AND "expires_at" IS NULL
        `,
    );
    await createIndexIfNotExists(
      queryRunner,
      `
            CREATE INDEX IF NOT EXISTS "IDX_databases_deletion_due" ON "databases" ("deletion_due_at")
            WHERE "deleted" IS NOT NULL AND "finalized" IS NULL
        `,
    );
    await createIndexIfNotExists(
      queryRunner,
      `
            CREATE INDEX IF NOT EXISTS "IDX_databases_unbuilt_by_created" ON "databases" ("created")
            WHERE "status" IN ('REQUESTED', 'BUILT') AND "deleted" IS NULL
        `,
    );
    await createIndexIfNotExists(
      queryRunner,
      `
            CREATE INDEX IF NOT EXISTS "IDX_compute_instances_unsettled" ON "compute_instances" ("updated")
            WHERE "terminated" IS NULL AND ("deleted" IS NOT NULL OR "status" <> 'READY' OR "instance_type_id" IS DISTINCT FROM "desired_instance_type_id")
        `,
    );
    await createIndexIfNotExists(
      queryRunner,
      `
            CREATE INDEX IF NOT EXISTS "IDX_invites_email_owed" ON "invites" ("expires_at")
            WHERE "state" = 'EMAIL_PENDING' AND "email_sent_at" IS NULL
        `,
    );
    await queryRunner.query(`
            DROP INDEX IF EXISTS "public"."IDX_dd25c82e6775c190f16c3272bc"
        `);
    await queryRunner.query(`
            DROP INDEX IF EXISTS "public"."IDX_4c472f9441971ff5b6a5e4563e"
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE INDEX "IDX_4c472f9441971ff5b6a5e4563e" ON "databases" ("deletion_due_at")
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_dd25c82e6775c190f16c3272bc" ON "credentials" ("expires_at")
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_invites_email_owed"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_compute_instances_unsettled"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_databases_unbuilt_by_created"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_databases_deletion_due"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_credentials_pending_by_created"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_credentials_expiry_due"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_oauth_authorization_codes_expires_at"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_oauth_refresh_tokens_expires_at"
        `);
  }
}
