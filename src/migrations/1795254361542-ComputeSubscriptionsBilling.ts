import { MigrationInterface, QueryRunner } from 'typeorm';

export class ComputeSubscriptionsBilling1795254361542 implements MigrationInterface {
  name = 'ComputeSubscriptionsBilling1795254361542';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "billing_rated_lines" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "workspace_id" uuid NOT NULL,
                "ym" character(7) NOT NULL,
                "component" character varying(40) NOT NULL,
                "source_id" character varying(100) NOT NULL,
                "quantity" numeric(18, 6) NOT NULL,
                "unit" character varying(20) NOT NULL,
                "unit_price" numeric(12, 6) NOT NULL,
                "amount" numeric(14, 6) NOT NULL,
                "rated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_98e11a3101cec0484f669dc4839" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE UNIQUE INDEX "IDX_6f687f2d21d505537b11fb00d1" ON "billing_rated_lines" ("workspace_id", "ym", "component", "source_id")
        `);
    await queryRunner.query(`
            CREATE TABLE "compute_types" (
                "id" character varying(40) NOT NULL,
                "compute_size" character varying(40) NOT NULL,
                "vcpus" integer NOT NULL,
                "memory" character varying(20) NOT NULL,
                "hourly_cost" numeric(10, 4) NOT NULL,
                "connection_limit" integer NOT NULL,
                "position" integer NOT NULL DEFAULT '0',
                CONSTRAINT "PK_96efbbfc032bccfcf70af84b40d" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE TYPE "public"."compute_instance_status" AS ENUM(
                'PENDING',
                'PROVISIONING',
                'READY',
                'RESIZING',
                'DELETING',
                'FAILED',
                'TERMINATED'
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "compute_instances" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "database_id" uuid NOT NULL,
                "name" character varying(512) NOT NULL,
                "instance_type_id" character varying(40),
                "desired_instance_type_id" character varying(40) NOT NULL,
                "status" "public"."compute_instance_status" NOT NULL DEFAULT 'PENDING',
                "last_error" text,
                "created" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "updated" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "deleted" TIMESTAMP WITH TIME ZONE,
                "terminated" TIMESTAMP WITH TIME ZONE,
                CONSTRAINT "PK_bbf4c70e04e2d1998b2006ac130" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_5a4e0151774f51e0e6f6aa2063" ON "compute_instances" ("database_id", "created")
        `);
    await queryRunner.query(`
            CREATE TABLE "compute_usage_periods" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "instance_id" uuid NOT NULL,
                "database_id" uuid NOT NULL,
                "workspace_id" uuid NOT NULL,
                "instance_type_id" character varying(40) NOT NULL,
                "compute_size" character varying(40) NOT NULL,
                "vcpus" integer NOT NULL,
                "hourly_cost" numeric(10, 4) NOT NULL,
                "started_at" TIMESTAMP WITH TIME ZONE NOT NULL,
                "ended_at" TIMESTAMP WITH TIME ZONE,
                CONSTRAINT "PK_0cb670f98fee5c63c5eda650cab" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE UNIQUE INDEX "IDX_70b84d4e6dea7f5279c30e0245" ON "compute_usage_periods" ("instance_id")
            WHERE "ended_at" IS NULL
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_6693ccb367a761a48a0661cd39" ON "compute_usage_periods" ("workspace_id", "started_at")
        `);
    await queryRunner.query(`
            CREATE TABLE "subscriptions" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "workspace_id" uuid NOT NULL,
                "level" character varying(20) NOT NULL,
                "valid_from" TIMESTAMP WITH TIME ZONE NOT NULL,
                "valid_to" TIMESTAMP WITH TIME ZONE,
                "changed_by" uuid,
                "created" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_a87248d73155605cf782be9ee5e" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_ee9e2278e198697d59989de172" ON "subscriptions" ("workspace_id", "valid_from")
        `);
    await queryRunner.query(`
            ALTER TABLE "compute_instances"
            ADD CONSTRAINT "FK_c919a9ad0c4069856ad172fa41f" FOREIGN KEY ("database_id") REFERENCES "databases"("id") ON DELETE RESTRICT ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "compute_instances"
            ADD CONSTRAINT "FK_c40d4fd4bb7f4b72f93f5560044" FOREIGN KEY ("instance_type_id") REFERENCES "compute_types"("id") ON DELETE RESTRICT ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "compute_instances"
            ADD CONSTRAINT "FK_5fe03544450d6f76e5e2236de16" FOREIGN KEY ("desired_instance_type_id") REFERENCES "compute_types"("id") ON DELETE RESTRICT ON UPDATE NO ACTION
        `);
    // The dedicated compute sizes offered (memory is a display string; hourly cost in USD).
    await queryRunner.query(`
            INSERT INTO "compute_types" ("id", "compute_size", "vcpus", "memory", "hourly_cost", "connection_limit", "position") VALUES
            ('dc-small', 'small', 2, '4 GiB', 0.1000, 50, 1),
            ('dc-medium', 'medium', 4, '8 GiB', 0.2000, 100, 2),
            ('dc-large', 'large', 8, '16 GiB', 0.4000, 200, 3),
            ('dc-xlarge', 'xlarge', 16, '32 GiB', 0.8000, 400, 4)
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DELETE FROM "compute_types"`);
    await queryRunner.query(`
            ALTER TABLE "compute_instances" DROP CONSTRAINT "FK_5fe03544450d6f76e5e2236de16"
        `);
    await queryRunner.query(`
            ALTER TABLE "compute_instances" DROP CONSTRAINT "FK_c40d4fd4bb7f4b72f93f5560044"
        `);
    await queryRunner.query(`
            ALTER TABLE "compute_instances" DROP CONSTRAINT "FK_c919a9ad0c4069856ad172fa41f"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_ee9e2278e198697d59989de172"
        `);
    await queryRunner.query(`
            DROP TABLE "subscriptions"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_6693ccb367a761a48a0661cd39"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_70b84d4e6dea7f5279c30e0245"
        `);
    await queryRunner.query(`
            DROP TABLE "compute_usage_periods"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_5a4e0151774f51e0e6f6aa2063"
        `);
    await queryRunner.query(`
            DROP TABLE "compute_instances"
        `);
    await queryRunner.query(`
            DROP TYPE "public"."compute_instance_status"
        `);
    await queryRunner.query(`
            DROP TABLE "compute_types"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_6f687f2d21d505537b11fb00d1"
        `);
    await queryRunner.query(`
            DROP TABLE "billing_rated_lines"
        `);
  }
}
