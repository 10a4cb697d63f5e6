import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Two billing corrections.
 *
 * A compute instance is billed up to the moment its delete was accepted, and the instances of a
 * deleted database up to when its deletion was due (see ComputeLifecycle.endUsage, deletionDueOf).
 * Deletes now close the instance's period themselves; an instance deleted before this release whose
 * termination has not happened yet (the data plane out of reach) still has an open period, which
 * would go on accruing until then: it is closed here as the delete would have closed it. Closed
 * periods (past bills) are left as they are.
 *
 * `billing_rated_lines.amount` was numeric(14,6) (under 10^8 USD): a month of the widest compute
 * type (999,999.9999 USD/h) or a large database at a high storage price overflowed it, and that
 * workspace's month failed its rating on every attempt. numeric(24,6) holds the product of the
 * largest quantity (numeric(18,6)) and unit price (numeric(12,6)) a line can have. Widening a
 * numeric's precision at the same scale changes no stored value and rewrites nothing in PostgreSQL.
 */
export class BillingEndAndAmountPrecision1795800000005 implements MigrationInterface {
  name = 'BillingEndAndAmountPrecision1795800000005';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "billing_rated_lines" ALTER COLUMN "amount" TYPE numeric(24,6)`);
    await queryRunner.query(
      `UPDATE "compute_usage_periods" p
          SET "ended_at" = GREATEST(p."started_at", LEAST(i."deleted",
                CASE WHEN d."deleted" IS NOT NULL THEN COALESCE(d."deletion_due_at", d."deleted") END))
         FROM "compute_instances" i JOIN "databases" d ON d."id" = i."database_id"
        WHERE i."id" = p."instance_id" AND p."ended_at" IS NULL AND i."deleted" IS NOT NULL`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    // Refused (numeric field overflow) while a line of 10^8 USD or more exists: re-rate or delete
    // those first. The periods closed above stay closed: they belong to deleted instances, which the
    // previous release closes too (at their termination); reopening them would bill time nobody used.
    await queryRunner.query(`ALTER TABLE "billing_rated_lines" ALTER COLUMN "amount" TYPE numeric(14,6)`);
  }
}
