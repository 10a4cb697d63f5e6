import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexIfNotExists } from '../database/index-if-not-exists';

/**
 * Indexes for periodic reads that otherwise read history kept for ever: placement's count of a
 * server's databases not finalized (every create, under the region's placement lock) and the
 * control_plane_databases gauge (every scrape) skip the tombstones, through an index that also
 * serves the insights sampler's read of a server's READY databases (in (created, id) order), so it
 * replaces that read's own index, which held the READY ones only; the billing sweep finds the
 * compute periods overlapping its two months (open ones, or ended since) and the workspaces with
 * storage in them without reading every month ever recorded.
 *
 * As in SweepIndexesAndTokenPruning, `IF NOT EXISTS` lets an operator with big tables build them
 * beforehand with `CREATE INDEX CONCURRENTLY` under the same names and definitions.
 */
export class HistoryIndexes1795800000002 implements MigrationInterface {
  name = 'HistoryIndexes1795800000002';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await createIndexIfNotExists(
      queryRunner,
      `
            CREATE INDEX IF NOT EXISTS "IDX_databases_unfinalized_by_server" ON "databases" ("server_id", "created", "id")
            WHERE "finalized" IS NULL
        `,
    );
    await createIndexIfNotExists(
      queryRunner,
      `
            CREATE INDEX IF NOT EXISTS "IDX_compute_usage_periods_ended_at" ON "compute_usage_periods" ("ended_at")
        `,
    );
    await createIndexIfNotExists(
      queryRunner,
      `
            CREATE INDEX IF NOT EXISTS "IDX_database_storage_usage_by_month" ON "database_storage_usage" ("ym", "workspace_id")
        `,
    );
    await queryRunner.query(`
            DROP INDEX IF EXISTS "public"."IDX_databases_usable_by_server"
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            DROP INDEX "public"."IDX_database_storage_usage_by_month"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_compute_usage_periods_ended_at"
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_databases_usable_by_server" ON "databases" ("server_id", "created", "id")
            WHERE "status" = 'READY' AND "finalized" IS NULL
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_databases_unfinalized_by_server"
        `);
  }
}
