import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexIfNotExists } from '../database/index-if-not-exists';

/**
 * The builds owed, by server: the reconciler's build sweep now takes them from the servers in turn
 * (builds stuck on one server, more than a pass takes, kept every other server's lost builds from
 * being re-enqueued), and includes databases deleted before they were built, which are still built
 * and work until their deletion is due. The old index (oldest first, deleted rows left out) served
 * the sweep alone. As in HistoryIndexes, `IF NOT EXISTS` lets an operator with a big table build the
 * new one beforehand with `CREATE INDEX CONCURRENTLY` under the same name and definition. No row
 * changes.
 */
export class UnbuiltByServer1795800000012 implements MigrationInterface {
  name = 'UnbuiltByServer1795800000012';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await createIndexIfNotExists(
      queryRunner,
      `
            CREATE INDEX IF NOT EXISTS "IDX_databases_unbuilt_by_server" ON "databases" ("server_id", "created", "id")
            WHERE "status" IN ('REQUESTED', 'BUILT') AND "finalized" IS NULL
        `,
    );
    await queryRunner.query(`DROP INDEX IF EXISTS "public"."IDX_databases_unbuilt_by_created"`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE INDEX "IDX_databases_unbuilt_by_created" ON "databases" ("created")
            WHERE "status" IN ('REQUESTED', 'BUILT') AND "deleted" IS NULL
        `);
    await queryRunner.query(`DROP INDEX "public"."IDX_databases_unbuilt_by_server"`);
  }
}
