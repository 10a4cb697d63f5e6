import { MigrationInterface, QueryRunner } from 'typeorm';

export class LiveDatabasesIndex1795462487577 implements MigrationInterface {
  name = 'LiveDatabasesIndex1795462487577';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE INDEX "IDX_databases_live_by_created" ON "databases" ("workspace_id", "created", "id")
            WHERE "deleted" IS NULL
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            DROP INDEX "public"."IDX_databases_live_by_created"
        `);
  }
}
