import { MigrationInterface, QueryRunner } from 'typeorm';

export class InviteEmailLease1795451181933 implements MigrationInterface {
  name = 'InviteEmailLease1795451181933';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "invites"
            ADD "email_lease_until" TIMESTAMP WITH TIME ZONE
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "invites" DROP COLUMN "email_lease_until"
        `);
  }
}
