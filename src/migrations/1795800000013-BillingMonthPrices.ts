import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `billing_month_prices`: the prices each month is rated at (see MonthPricesEntity), so a change of
 * PRO_MONTHLY_PRICE_USD, STORAGE_PRICE_PER_GB_MONTH_USD or FREE_STORAGE_INCLUDED_GB no longer
 * reprices months already billed. An install's months are recorded at their next rating after the
 * upgrade, at the configuration of that moment: the prices they were last rated at, unless the
 * configuration changed since then. No other row changes.
 */
export class BillingMonthPrices1795800000013 implements MigrationInterface {
  name = 'BillingMonthPrices1795800000013';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TABLE "billing_month_prices" (
                "ym" character(7) NOT NULL,
                "pro_monthly_price_usd" numeric(12, 6) NOT NULL,
                "storage_price_per_gb_month_usd" numeric(12, 6) NOT NULL,
                "free_storage_included_gb" numeric(13, 6) NOT NULL,
                "recorded" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_0e02ef57dc30261ca0d75b9823e" PRIMARY KEY ("ym")
            )
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "billing_month_prices"`);
  }
}
