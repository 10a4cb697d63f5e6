import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `data_plane_servers.system_identifier`: the PostgreSQL cluster's identifier, unique per region, so
 * one cluster is one server of a region (several regions may share one: by default every region's
 * first server comes from DATA_PLANE_URL). Servers registered before stay null until a `server:add` or a
 * `server:update --url` reads theirs (it needs a connection to them, which a migration does not make).
 */
export class ServerIdentity1795800000015 implements MigrationInterface {
  name = 'ServerIdentity1795800000015';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "data_plane_servers" ADD "system_identifier" character varying(20)`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "IDX_0c32206d540e0ad2a25300f07a" ON "data_plane_servers" ("region", "system_identifier")`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IDX_0c32206d540e0ad2a25300f07a"`);
    await queryRunner.query(`ALTER TABLE "data_plane_servers" DROP COLUMN "system_identifier"`);
  }
}
