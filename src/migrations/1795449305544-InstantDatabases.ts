import { MigrationInterface, QueryRunner } from 'typeorm';

export class InstantDatabases1795449305544 implements MigrationInterface {
  name = 'InstantDatabases1795449305544';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "database_claims" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "database_id" uuid,
                "code_hash" character(64) NOT NULL,
                "client_address" character varying(100) NOT NULL,
                "created" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL,
                "claimed_at" TIMESTAMP WITH TIME ZONE,
                "claimed_by" uuid,
                CONSTRAINT "UQ_2a674a63ebd034360b2f09503c7" UNIQUE ("database_id"),
                CONSTRAINT "UQ_8663996f44f2199f9d3bf626737" UNIQUE ("code_hash"),
                CONSTRAINT "PK_c1c453e3f31b6a3d3cd4ad794df" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_c1d8ab592c585824bdfc5a61a0" ON "database_claims" ("client_address", "created")
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_9a144502cc8cfa8cbb0978bafd" ON "database_claims" ("created")
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            DROP INDEX "public"."IDX_9a144502cc8cfa8cbb0978bafd"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_c1d8ab592c585824bdfc5a61a0"
        `);
    await queryRunner.query(`
            DROP TABLE "database_claims"
        `);
  }
}
