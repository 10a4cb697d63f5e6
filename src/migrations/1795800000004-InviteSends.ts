import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `invite_sends`: one row per invite e-mail owed (written with the invite), counted against the
 * invite e-mail limits per sender and per recipient address over the last hour. No foreign keys:
 * a row outlives its invite (and the invite's workspace and sender), or deleting would give the
 * allowance back. The reconciler deletes rows once they leave the window (`created` index).
 */
export class InviteSends1795800000004 implements MigrationInterface {
  name = 'InviteSends1795800000004';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "invite_sends" ("id" BIGSERIAL NOT NULL, "sender_id" uuid NOT NULL, "email" character varying(320) NOT NULL, "created" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_08422a12d01bd5a63e7a2b3687c" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_0fa92aadf51268970aea66bb89" ON "invite_sends"  ("created") `);
    await queryRunner.query(`CREATE INDEX "IDX_3599722b12252c9aaba685a684" ON "invite_sends"  ("email", "created") `);
    await queryRunner.query(
      `CREATE INDEX "IDX_7ae5ef083264926d984b5d60ab" ON "invite_sends"  ("sender_id", "created") `,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IDX_7ae5ef083264926d984b5d60ab"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_3599722b12252c9aaba685a684"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_0fa92aadf51268970aea66bb89"`);
    await queryRunner.query(`DROP TABLE "invite_sends"`);
  }
}
