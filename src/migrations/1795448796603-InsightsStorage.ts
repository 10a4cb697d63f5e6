import { MigrationInterface, QueryRunner } from 'typeorm';

export class InsightsStorage1795448796603 implements MigrationInterface {
  name = 'InsightsStorage1795448796603';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "database_storage_usage" (
                "database_id" uuid NOT NULL,
                "ym" character(7) NOT NULL,
                "workspace_id" uuid NOT NULL,
                "byte_seconds" numeric(38, 0) NOT NULL,
                "observed_seconds" bigint NOT NULL,
                CONSTRAINT "PK_9df98e09cfe1e78564309ff5444" PRIMARY KEY ("database_id", "ym")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_86fd46721abe9438945da93c20" ON "database_storage_usage" ("workspace_id", "ym")
        `);
    await queryRunner.query(`
            CREATE TABLE "database_telemetry_samples" (
                "database_id" uuid NOT NULL,
                "sampled_at" TIMESTAMP WITH TIME ZONE NOT NULL,
                "workspace_id" uuid NOT NULL,
                "server_key" character varying(300) NOT NULL,
                "observed_seconds" integer NOT NULL,
                "up_seconds" integer NOT NULL,
                "size_bytes" bigint,
                "delta_seconds" double precision,
                "counters" jsonb,
                "error_deltas" jsonb,
                "statements_available" boolean NOT NULL,
                "statement_calls" bigint,
                "statement_exec_ms" double precision,
                "statement_calls_delta" bigint,
                "statement_exec_ms_delta" double precision,
                CONSTRAINT "PK_3d9da8aa80d195736a4eb2ec985" PRIMARY KEY ("database_id", "sampled_at")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_6966c1c5d880c2a9b9d034e89d" ON "database_telemetry_samples" ("workspace_id", "sampled_at")
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_7afc4029469c4836b1d69c2131" ON "database_telemetry_samples" ("sampled_at")
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            DROP INDEX "public"."IDX_7afc4029469c4836b1d69c2131"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_6966c1c5d880c2a9b9d034e89d"
        `);
    await queryRunner.query(`
            DROP TABLE "database_telemetry_samples"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_86fd46721abe9438945da93c20"
        `);
    await queryRunner.query(`
            DROP TABLE "database_storage_usage"
        `);
  }
}
