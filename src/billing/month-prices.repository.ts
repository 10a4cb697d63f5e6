import { Injectable } from '@nestjs/common';
import { MetadataTransactions } from '../database/metadata-transactions';

/** The prices a month is rated at (see MonthPricesEntity). */
export interface MonthPrices {
  proMonthlyPriceUsd: number;
  storagePricePerGbMonthUsd: number;
  freeStorageIncludedGb: number;
}

/**
 * Every statement on `billing_month_prices` (habit 15), through the transaction the context carries
 * (MetadataTransactions).
 */
@Injectable()
export class MonthPricesRepository {
  constructor(private readonly txHost: MetadataTransactions) {}

  /**
   * The month's prices: those recorded for it, or `current`, recorded now when there are none (the
   * first rating of the month). A month recorded meanwhile by another process (its insert committed
   * after this statement's snapshot was taken) is read again.
   */
  async recordedOr(ym: string, current: MonthPrices): Promise<MonthPrices> {
    const columns = `pro_monthly_price_usd::float8 AS "proMonthlyPriceUsd",
                     storage_price_per_gb_month_usd::float8 AS "storagePricePerGbMonthUsd",
                     free_storage_included_gb::float8 AS "freeStorageIncludedGb"`;
    const read = () =>
      this.txHost.tx.query<MonthPrices[]>(`SELECT ${columns} FROM billing_month_prices WHERE ym = $1`, [ym]);
    const [found] = await read();
    if (found) return found;
    const [recorded] = await this.txHost.tx.query<MonthPrices[]>(
      `INSERT INTO billing_month_prices (ym, pro_monthly_price_usd, storage_price_per_gb_month_usd, free_storage_included_gb)
       VALUES ($1, $2, $3, $4) ON CONFLICT (ym) DO NOTHING
       RETURNING ${columns}`,
      [ym, current.proMonthlyPriceUsd, current.storagePricePerGbMonthUsd, current.freeStorageIncludedGb],
    );
    return recorded ?? (await read())[0];
  }
}
