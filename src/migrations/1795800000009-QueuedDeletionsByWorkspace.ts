import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexIfNotExists } from '../database/index-if-not-exists';

/**
 * A workspace's databases queued for deletion, by due time: a create within a limited plan counts
 * them, since they keep their place on their server until they are finalized (see PlanLimits). Only
 * rows still owed a finalization are in it, so the count never reads a workspace's tombstones. As in
 * HistoryIndexes, `IF NOT EXISTS` lets an operator with a big table build it beforehand with
 * `CREATE INDEX CONCURRENTLY` under the same name and definition. No row changes.
 */
export class QueuedDeletionsByWorkspace1795800000009 implements MigrationInterface {
  name = 'QueuedDeletionsByWorkspace1795800000009';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await createIndexIfNotExists(
      queryRunner,
      `
            CREATE INDEX IF NOT EXISTS "IDX_databases_queued_by_workspace" ON "databases" ("workspace_id", "deletion_due_at")
            WHERE "deleted" IS NOT NULL AND "finalized" IS NULL
        `,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IDX_databases_queued_by_workspace"`);
  }
}
