import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Marks the given FREE rows ImplicitSubscription missed. The releases before it wrote that row with
 * `valid_from` taken from the workspace entity, a JavaScript Date, so cut to milliseconds, while
 * `workspaces.created` keeps PostgreSQL's microseconds: the two were almost never equal, and such a
 * row stayed unmarked (POST kept answering 409). The same conditions otherwise (the workspace's only
 * row, FREE, still open, changed by nobody), with `valid_from` equal to the creation cut to
 * milliseconds. Data only: `down` leaves the marks (the column is ImplicitSubscription's).
 */
export class ImplicitSubscriptionMilliseconds1795800000007 implements MigrationInterface {
  name = 'ImplicitSubscriptionMilliseconds1795800000007';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            UPDATE "subscriptions" s SET "implicit" = true
              FROM "workspaces" w
             WHERE w."id" = s."workspace_id"
               AND NOT s."implicit"
               AND s."level" = 'FREE'
               AND s."changed_by" IS NULL
               AND s."valid_to" IS NULL
               AND s."valid_from" = date_trunc('milliseconds', w."created")
               AND NOT EXISTS (SELECT 1 FROM "subscriptions" o
                                WHERE o."workspace_id" = s."workspace_id" AND o."id" <> s."id")
        `);
  }

  public async down(): Promise<void> {
    // Nothing to undo: the marks stay with the column, which ImplicitSubscription's down removes.
  }
}
