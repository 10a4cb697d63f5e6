import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';
import { numericTransformer } from '../database/numeric.transformer';

/**
 * The prices a month is rated at, for every workspace: those of the configuration
 * (PRO_MONTHLY_PRICE_USD, STORAGE_PRICE_PER_GB_MONTH_USD, FREE_STORAGE_INCLUDED_GB) when the month
 * was first rated, normally by the sweep in its first minutes. Kept for good, so a change of the
 * configuration applies from the next month on and never reprices one already billed. (Compute
 * carries its price on each usage period.)
 */
@Entity('billing_month_prices')
export class MonthPricesEntity {
  /** The month, `YYYY-MM`. */
  @PrimaryColumn({ type: 'char', length: 7 })
  ym!: string;

  @Column({ name: 'pro_monthly_price_usd', type: 'numeric', precision: 12, scale: 6, transformer: numericTransformer })
  proMonthlyPriceUsd!: number;

  @Column({
    name: 'storage_price_per_gb_month_usd',
    type: 'numeric',
    precision: 12,
    scale: 6,
    transformer: numericTransformer,
  })
  storagePricePerGbMonthUsd!: number;

  @Column({
    name: 'free_storage_included_gb',
    type: 'numeric',
    precision: 13,
    scale: 6,
    transformer: numericTransformer,
  })
  freeStorageIncludedGb!: number;

  @CreateDateColumn({ type: 'timestamptz' })
  recorded!: Date;
}
