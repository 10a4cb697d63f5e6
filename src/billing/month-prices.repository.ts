import { Injectable } from '@nestjs/common';
import { MetadataTransactions } from '../database/metadata-transactions';

/** The prices a month is rated at (see MonthPricesEntity). */
export interface MonthPrices {
  proMonthlyPriceUsd: number;
  storagePricePerGbMonthUsd: number;
  freeStorageIncludedGb: number;
}

const COLUMNS = `pro_monthly_price_usd::float8 AS "proMonthlyPriceUsd",
                 storage_price_per_gb_month_usd::float8 AS "storagePricePerGbMonthUsd",
                 free_storage_included_gb::float8 AS "freeStorageIncludedGb"`;

/**
 * Every statement on `billing_month_prices` (habit 15), through the transaction the context carries
 * (MetadataTransactions).
 */
@Injectable()
export class MonthPricesRepository {
  constructor(private readonly txHost: MetadataTransactions) {}

  /**
   * The month's prices: those recorded for it, else recorded now. The current month is recorded at
   * `current` (the configuration's); a past month none was recorded for (one no sweep ran in, or
   * one rated before prices were recorded) at those of the nearest month recorded before it, else
   * after it, so a change of the configuration never reaches back; `current` only when none is.
   * A month recorded meanwhile by another process (its insert committed after this statement's
   * snapshot was taken) is read again.
   */
  async recordedOr(ym: string, current: MonthPrices, past: boolean): Promise<MonthPrices> {
    const read = () =>
      this.txHost.tx.query<MonthPrices[]>(`SELECT ${COLUMNS} FROM billing_month_prices WHERE ym = $1`, [ym]);
    const [found] = await read();
    if (found) return found;
    const [nearest] = past
      ? await this.txHost.tx.query<MonthPrices[]>(
          `SELECT * FROM ((SELECT ${COLUMNS}, 0 AS side FROM billing_month_prices WHERE ym < $1 ORDER BY ym DESC LIMIT 1)
                          UNION ALL
                          (SELECT ${COLUMNS}, 1 AS side FROM billing_month_prices WHERE ym > $1 ORDER BY ym LIMIT 1)) near
            ORDER BY side LIMIT 1`,
          [ym],
        )
      : [];
    const prices = nearest ?? current;
    const [recorded] = await this.txHost.tx.query<MonthPrices[]>(
      `INSERT INTO billing_month_prices (ym, pro_monthly_price_usd, storage_price_per_gb_month_usd, free_storage_included_gb)
       VALUES ($1, $2, $3, $4) ON CONFLICT (ym) DO NOTHING
       RETURNING ${COLUMNS}`,
      [ym, prices.proMonthlyPriceUsd, prices.storagePricePerGbMonthUsd, prices.freeStorageIncludedGb],
    );
    return recorded ?? (await read())[0];
  }
}
