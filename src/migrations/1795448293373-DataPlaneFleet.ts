import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The fleet: data-plane servers become rows, databases and warm-pool entries record their server,
 * credentials record a create not yet confirmed on the data plane (`pending`).
 *
 * Upgrading an install: existing databases and pooled entries get `server_id` NULL here, because
 * the server's admin URL lives in the environment (DATA_PLANE_URL[_<REGION>]) and is sealed with
 * the app's keys, which a migration does not have. The first boot after the upgrade registers each
 * region's server from the environment and attaches every row without a server to it
 * (DataPlaneServers.registerFromEnvironment, Placement.attachUnplaced). Existing credentials are
 * confirmed ones (`pending` false).
 */
export class DataPlaneFleet1795448293373 implements MigrationInterface {
  name = 'DataPlaneFleet1795448293373';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TYPE "public"."data_plane_server_state" AS ENUM('ACTIVE', 'DRAINING', 'DISABLED')
        `);
    await queryRunner.query(`
            CREATE TABLE "data_plane_servers" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "region" character varying(40) NOT NULL,
                "admin_url_ciphertext" text NOT NULL,
                "public_host" character varying(255) NOT NULL,
                "max_databases" integer NOT NULL,
                "state" "public"."data_plane_server_state" NOT NULL DEFAULT 'ACTIVE',
                "created" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "updated" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_2cd02a738d6c23af77549490cdd" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_65daaf70377c8cfed9b0754d97" ON "data_plane_servers" ("region", "state")
        `);
    await queryRunner.query(`
            ALTER TABLE "databases"
            ADD "server_id" uuid
        `);
    await queryRunner.query(`
            ALTER TABLE "credentials"
            ADD "pending" boolean NOT NULL DEFAULT false
        `);
    await queryRunner.query(`
            ALTER TABLE "pooled_databases"
            ADD "server_id" uuid
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_d7048d6013c8c150913df60f92" ON "databases" ("server_id")
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_a506bd7a6c70fd0ae863b95f15" ON "pooled_databases" ("server_id", "ready")
        `);
    await queryRunner.query(`
            ALTER TABLE "databases"
            ADD CONSTRAINT "FK_d7048d6013c8c150913df60f92b" FOREIGN KEY ("server_id") REFERENCES "data_plane_servers"("id") ON DELETE RESTRICT ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "pooled_databases"
            ADD CONSTRAINT "FK_b838d8481772371365dfca107f8" FOREIGN KEY ("server_id") REFERENCES "data_plane_servers"("id") ON DELETE RESTRICT ON UPDATE NO ACTION
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "pooled_databases" DROP CONSTRAINT "FK_b838d8481772371365dfca107f8"
        `);
    await queryRunner.query(`
            ALTER TABLE "databases" DROP CONSTRAINT "FK_d7048d6013c8c150913df60f92b"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_a506bd7a6c70fd0ae863b95f15"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_d7048d6013c8c150913df60f92"
        `);
    await queryRunner.query(`
            ALTER TABLE "pooled_databases" DROP COLUMN "server_id"
        `);
    await queryRunner.query(`
            ALTER TABLE "credentials" DROP COLUMN "pending"
        `);
    await queryRunner.query(`
            ALTER TABLE "databases" DROP COLUMN "server_id"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_65daaf70377c8cfed9b0754d97"
        `);
    await queryRunner.query(`
            DROP TABLE "data_plane_servers"
        `);
    await queryRunner.query(`
            DROP TYPE "public"."data_plane_server_state"
        `);
  }
}
