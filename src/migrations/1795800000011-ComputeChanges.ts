import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `compute_changes`: one row per create or change of size of a database's dedicated compute, counted
 * against COMPUTE_CHANGES_PER_DATABASE_PER_DAY and pruned by the reconciler after the day.
 *
 * An install's last day is brought in, so the limit holds across the upgrade: the instances created
 * within the last 24 hours, and the changes of size applied within them (a usage period that follows
 * another of its instance). Resizes asked for and replaced before they were applied left no trace
 * and are not counted.
 */
export class ComputeChanges1795800000011 implements MigrationInterface {
  name = 'ComputeChanges1795800000011';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "compute_changes" ("id" BIGSERIAL NOT NULL, "database_id" uuid NOT NULL, "created" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_d9467b9eea7d28b57cf324840c6" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_dd3a08c9727cfb9ed9cab956c7" ON "compute_changes"  ("created") `);
    await queryRunner.query(
      `CREATE INDEX "IDX_2e626e06122aa49aa6b0a1e09e" ON "compute_changes"  ("database_id", "created") `,
    );
    await queryRunner.query(`
            INSERT INTO "compute_changes" ("database_id", "created")
            SELECT "database_id", "created" FROM "compute_instances" WHERE "created" > now() - interval '24 hours'
            UNION ALL
            SELECT p."database_id", p."started_at" FROM "compute_usage_periods" p
             WHERE p."started_at" > now() - interval '24 hours'
               AND EXISTS (SELECT 1 FROM "compute_usage_periods" q
                            WHERE q."instance_id" = p."instance_id" AND q."started_at" < p."started_at")
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IDX_2e626e06122aa49aa6b0a1e09e"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_dd3a08c9727cfb9ed9cab956c7"`);
    await queryRunner.query(`DROP TABLE "compute_changes"`);
  }
}
