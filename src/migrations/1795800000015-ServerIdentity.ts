import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `data_plane_servers.system_identifier`: the PostgreSQL cluster's identifier, unique, so one
 * cluster is registered once. Servers registered before stay null until a `server:add` or a
 * `server:update --url` reads theirs (it needs a connection to them, which a migration does not make).
 */
export class ServerIdentity1795800000015 implements MigrationInterface {
  name = 'ServerIdentity1795800000015';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "data_plane_servers" ADD "system_identifier" character varying(20)`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "IDX_217f9bdcddaf8103105a0d00bd" ON "data_plane_servers" ("system_identifier")`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IDX_217f9bdcddaf8103105a0d00bd"`);
    await queryRunner.query(`ALTER TABLE "data_plane_servers" DROP COLUMN "system_identifier"`);
  }
}
