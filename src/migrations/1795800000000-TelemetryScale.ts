import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The insights sampler's read of one server's usable databases (READY, not finalized), in the
 * order a pass takes them, without the tombstones. The previous-sample read needs no index of its
 * own: the samples' primary key (database_id, sampled_at) answers it.
 */
export class TelemetryScale1795800000000 implements MigrationInterface {
  name = 'TelemetryScale1795800000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE INDEX "IDX_databases_usable_by_server" ON "databases" ("server_id", "created", "id")
            WHERE "status" = 'READY' AND "finalized" IS NULL
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            DROP INDEX "public"."IDX_databases_usable_by_server"
        `);
  }
}
