import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexIfNotExists } from '../database/index-if-not-exists';

/**
 * A database's credentials not dropped, and its compute instances not terminated, each in (created,
 * id) order. The reads on every credential create (the plan's count), list and rotation, and on every
 * instance create (the cap's count), list and envelope, and the compute sweep's, went through
 * (database_id, created), which holds every credential a database ever had and every instance it
 * ever ran: a database whose credentials or instances were created and deleted in a loop made each of
 * them slower without end. As in HistoryIndexes, `IF NOT EXISTS` lets an operator with big tables
 * build them beforehand with `CREATE INDEX CONCURRENTLY` under the same names and definitions. No row
 * changes.
 */
export class LiveCredentialsAndInstancesIndexes1795800000010 implements MigrationInterface {
  name = 'LiveCredentialsAndInstancesIndexes1795800000010';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await createIndexIfNotExists(
      queryRunner,
      `
            CREATE INDEX IF NOT EXISTS "IDX_credentials_live_by_database" ON "credentials" ("database_id", "created", "id")
            WHERE "dropped" IS NULL
        `,
    );
    await createIndexIfNotExists(
      queryRunner,
      `
            CREATE INDEX IF NOT EXISTS "IDX_compute_instances_unterminated_by_database" ON "compute_instances" ("database_id", "created", "id")
            WHERE "terminated" IS NULL
        `,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IDX_compute_instances_unterminated_by_database"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_credentials_live_by_database"`);
  }
}
