import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A compute instance is billed up to the moment its delete was accepted, and the instances of a
 * deleted database up to when its deletion was due (see ComputeLifecycle.endUsage, deletionDueOf).
 * Deletes now close the instance's period themselves; an instance deleted before this release whose
 * termination has not happened yet (the data plane out of reach) still has an open period, which
 * would go on accruing until then: it is closed here as the delete would have closed it. Closed
 * periods (past bills) are left as they are.
 */
export class ComputeBillingEnd1795800000005 implements MigrationInterface {
  name = 'ComputeBillingEnd1795800000005';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `UPDATE "compute_usage_periods" p
          SET "ended_at" = GREATEST(p."started_at", LEAST(i."deleted",
                CASE WHEN d."deleted" IS NOT NULL THEN COALESCE(d."deletion_due_at", d."deleted") END))
         FROM "compute_instances" i JOIN "databases" d ON d."id" = i."database_id"
        WHERE i."id" = p."instance_id" AND p."ended_at" IS NULL AND i."deleted" IS NOT NULL`,
    );
  }

  public async down(): Promise<void> {
    // Nothing to undo: the periods closed above belong to deleted instances, which the previous
    // release closes too (at their termination); reopening them would bill time nobody used.
  }
}
