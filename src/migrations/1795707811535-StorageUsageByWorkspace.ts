import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `database_storage_usage` is kept per database, month and workspace: each sample's storage counts
 * for the workspace that held the database when it was taken, so after an instant database is
 * claimed the rest of the month is the claiming workspace's (before, a row of (database, month) kept
 * the holding workspace it was first written for, and the claiming one was billed nothing).
 *
 * Existing rows stay as they are (unique under the wider key), except the months of a database
 * whose samples were taken for another workspace than the row's and are all still kept (none
 * pruned: their storage adds up to the row's exactly): those are split by the samples' workspace.
 * Older months, whose samples are partly pruned, cannot be split and stay with the workspace
 * they were recorded for.
 */
export class StorageUsageByWorkspace1795707811535 implements MigrationInterface {
  name = 'StorageUsageByWorkspace1795707811535';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "database_storage_usage" DROP CONSTRAINT "PK_9df98e09cfe1e78564309ff5444"
        `);
    await queryRunner.query(`
            ALTER TABLE "database_storage_usage"
            ADD CONSTRAINT "PK_3dc6aa256e0c85dd3490496692d" PRIMARY KEY ("database_id", "ym", "workspace_id")
        `);
    await queryRunner.query(`
            CREATE TEMP TABLE "storage_usage_regrouped" AS
            WITH sampled AS (
              SELECT database_id, to_char(sampled_at AT TIME ZONE 'UTC', 'YYYY-MM') AS ym, workspace_id,
                     sum(size_bytes::numeric * observed_seconds) AS byte_seconds,
                     sum(observed_seconds) AS observed_seconds
                FROM "database_telemetry_samples" WHERE size_bytes IS NOT NULL
               GROUP BY 1, 2, 3
            ), regroupable AS (
              SELECT u.database_id, u.ym
                FROM "database_storage_usage" u JOIN sampled s ON s.database_id = u.database_id AND s.ym = u.ym
               GROUP BY u.database_id, u.ym, u.workspace_id, u.byte_seconds, u.observed_seconds
              HAVING sum(s.byte_seconds) = u.byte_seconds AND sum(s.observed_seconds) = u.observed_seconds
                 AND bool_or(s.workspace_id <> u.workspace_id)
            )
            SELECT s.database_id, s.ym, s.workspace_id, s.byte_seconds, s.observed_seconds
              FROM sampled s JOIN regroupable r ON r.database_id = s.database_id AND r.ym = s.ym
        `);
    await queryRunner.query(`
            DELETE FROM "database_storage_usage" u USING "storage_usage_regrouped" r
             WHERE u.database_id = r.database_id AND u.ym = r.ym
        `);
    await queryRunner.query(`
            INSERT INTO "database_storage_usage" (database_id, ym, workspace_id, byte_seconds, observed_seconds)
            SELECT database_id, ym, workspace_id, byte_seconds, observed_seconds FROM "storage_usage_regrouped"
        `);
    await queryRunner.query(`
            DROP TABLE "storage_usage_regrouped"
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    // One row per database and month again: a month split between workspaces is merged into the
    // row of the workspace holding the database now (or, if none of them does, the first by id).
    await queryRunner.query(`
            CREATE TEMP TABLE "storage_usage_merged" AS
            SELECT u.database_id, u.ym,
                   (array_agg(u.workspace_id ORDER BY u.workspace_id = d.workspace_id DESC NULLS LAST, u.workspace_id))[1]
                     AS workspace_id,
                   sum(u.byte_seconds) AS byte_seconds, sum(u.observed_seconds) AS observed_seconds
              FROM "database_storage_usage" u LEFT JOIN "databases" d ON d.id = u.database_id
             GROUP BY u.database_id, u.ym
            HAVING count(*) > 1
        `);
    await queryRunner.query(`
            DELETE FROM "database_storage_usage" u USING "storage_usage_merged" m
             WHERE u.database_id = m.database_id AND u.ym = m.ym
        `);
    await queryRunner.query(`
            INSERT INTO "database_storage_usage" (database_id, ym, workspace_id, byte_seconds, observed_seconds)
            SELECT database_id, ym, workspace_id, byte_seconds, observed_seconds FROM "storage_usage_merged"
        `);
    await queryRunner.query(`
            DROP TABLE "storage_usage_merged"
        `);
    await queryRunner.query(`
            ALTER TABLE "database_storage_usage" DROP CONSTRAINT "PK_3dc6aa256e0c85dd3490496692d"
        `);
    await queryRunner.query(`
            ALTER TABLE "database_storage_usage"
            ADD CONSTRAINT "PK_9df98e09cfe1e78564309ff5444" PRIMARY KEY ("database_id", "ym")
        `);
  }
}
