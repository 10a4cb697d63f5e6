import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `subscriptions.implicit`: true on the FREE row a workspace is given at its creation while no client
 * has written its subscription, so that POST can start the level a client asks for there.
 *
 * Existing rows are marked by what only such a row can look like: the workspace's only row, FREE,
 * from the workspace's creation (the given row copies `workspaces.created`; a client's start begins
 * at the request's time, and the given row is always written first), still open (a change or a
 * close ends it) and with no `changed_by` (a change to another level records the caller). A row a
 * client touched without leaving a trace (a scheduled change cancelled before it took effect) is
 * marked too: POST then starts a subscription where it answered 409, the lenient side.
 */
export class ImplicitSubscription1795800000003 implements MigrationInterface {
  name = 'ImplicitSubscription1795800000003';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "subscriptions" ADD "implicit" boolean NOT NULL DEFAULT false`);
    await queryRunner.query(`
            UPDATE "subscriptions" s SET "implicit" = true
              FROM "workspaces" w
             WHERE w."id" = s."workspace_id"
               AND s."level" = 'FREE'
               AND s."changed_by" IS NULL
               AND s."valid_to" IS NULL
               AND s."valid_from" = w."created"
               AND NOT EXISTS (SELECT 1 FROM "subscriptions" o
                                WHERE o."workspace_id" = s."workspace_id" AND o."id" <> s."id")
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "subscriptions" DROP COLUMN "implicit"`);
  }
}
