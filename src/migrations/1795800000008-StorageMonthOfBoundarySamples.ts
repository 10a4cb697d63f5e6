import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The storage of a sample taken at 00:00Z on the 1st belongs to the month that just ended (the
 * interval it stands for ends there); it used to be added to the new month. For the samples still
 * kept, their byte-seconds and seconds are moved from the later month's row to the earlier one's
 * (per database and workspace, as recorded): without it, the month in progress at the upgrade would
 * count its opening sample (old rule) and its closing one (new rule). Months whose boundary samples
 * are pruned stay as recorded. `down` moves them back.
 */
export class StorageMonthOfBoundarySamples1795800000008 implements MigrationInterface {
  name = 'StorageMonthOfBoundarySamples1795800000008';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await moveBoundarySamples(queryRunner, 'earlier');
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await moveBoundarySamples(queryRunner, 'later');
  }
}

async function moveBoundarySamples(queryRunner: QueryRunner, to: 'earlier' | 'later'): Promise<void> {
  const [from, into] = to === 'earlier' ? ['later_ym', 'earlier_ym'] : ['earlier_ym', 'later_ym'];
  // What each boundary sample added, per database, workspace and month pair; only where the month it
  // is taken from holds it (a row pruned or split otherwise is left alone). The samples are looked up
  // by the month starts from the oldest kept to the newest (the sampled_at index), not by reading the table.
  // (The migration runs before any new sample is recorded: those kept were all metered by the old rule.)
  await queryRunner.query(`
        CREATE TEMPORARY TABLE "storage_boundary_moves" AS
        SELECT b.* FROM (
                 SELECT "database_id", "workspace_id",
                        to_char("sampled_at" AT TIME ZONE 'UTC', 'YYYY-MM') AS "later_ym",
                        to_char(("sampled_at" - interval '1 microsecond') AT TIME ZONE 'UTC', 'YYYY-MM') AS "earlier_ym",
                        sum("size_bytes"::numeric * "observed_seconds") AS "byte_seconds",
                        sum("observed_seconds") AS "observed_seconds"
                   FROM "database_telemetry_samples"
                  WHERE "size_bytes" IS NOT NULL
                    AND "sampled_at" = ANY (ARRAY(
                          SELECT m AT TIME ZONE 'UTC'
                            FROM generate_series(
                                   date_trunc('month', (SELECT min("sampled_at") FROM "database_telemetry_samples")
                                                         AT TIME ZONE 'UTC'),
                                   (SELECT max("sampled_at") FROM "database_telemetry_samples") AT TIME ZONE 'UTC',
                                   interval '1 month') AS m))
                  GROUP BY 1, 2, 3, 4) b
          JOIN "database_storage_usage" u
            ON u."database_id" = b."database_id" AND u."workspace_id" = b."workspace_id" AND u."ym" = b."${from}"
         WHERE u."byte_seconds" >= b."byte_seconds" AND u."observed_seconds" >= b."observed_seconds"`);
  await queryRunner.query(`
        UPDATE "database_storage_usage" u
           SET "byte_seconds" = u."byte_seconds" - m."byte_seconds",
               "observed_seconds" = u."observed_seconds" - m."observed_seconds"
          FROM "storage_boundary_moves" m
         WHERE u."database_id" = m."database_id" AND u."workspace_id" = m."workspace_id" AND u."ym" = m."${from}"`);
  await queryRunner.query(`
        INSERT INTO "database_storage_usage" ("database_id", "ym", "workspace_id", "byte_seconds", "observed_seconds")
        SELECT "database_id", "${into}", "workspace_id", "byte_seconds", "observed_seconds" FROM "storage_boundary_moves"
        ON CONFLICT ("database_id", "ym", "workspace_id") DO UPDATE
           SET "byte_seconds" = "database_storage_usage"."byte_seconds" + EXCLUDED."byte_seconds",
               "observed_seconds" = "database_storage_usage"."observed_seconds" + EXCLUDED."observed_seconds"`);
  // A month left with nothing observed held only boundary samples.
  await queryRunner.query(`DELETE FROM "database_storage_usage" WHERE "observed_seconds" = 0`);
  await queryRunner.query(`DROP TABLE "storage_boundary_moves"`);
}
