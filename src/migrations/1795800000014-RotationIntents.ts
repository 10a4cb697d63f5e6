import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `credentials.issued_by_rotation`: whether a credential was issued by a rotation, so a rotation's
 * plan check counts the creates still making their roles but not the other rotations' (each of
 * those is decided in its own turn). Existing rows are not rotations' (false): a rotation's intent
 * pending across the upgrade is counted as a create would be, which can refuse one concurrent
 * rotation that would have passed; nothing else changes.
 */
export class RotationIntents1795800000014 implements MigrationInterface {
  name = 'RotationIntents1795800000014';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "credentials" ADD "issued_by_rotation" boolean NOT NULL DEFAULT false`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "credentials" DROP COLUMN "issued_by_rotation"`);
  }
}
