import { Injectable } from '@nestjs/common';
import { MetadataTransactions } from '../database/metadata-transactions';
import { lockForContextTransaction } from '../database/transaction-lock';
import { ALL_BILLING_COMPONENTS, type RatedLine } from './rating';

/**
 * Every statement on `billing_rated_lines` (habit 15). Statements go through the transaction the
 * context carries (MetadataTransactions): inside its withTransaction they join it, outside they
 * run on their own.
 */
@Injectable()
export class RatedLinesRepository {
  constructor(private readonly txHost: MetadataTransactions) {}

  /** Serialises the ratings of the workspace's month for the rest of the context's transaction. */
  lockMonth(workspaceId: string, ym: string): Promise<void> {
    return lockForContextTransaction(this.txHost, `billing:${workspaceId}:${ym}`);
  }

  /**
   * Makes the month's lines equal to `lines`: deletes the lines whose source is no longer among
   * them, upserts the rest (a line whose figures did not change is not rewritten).
   */
  async replaceMonth(workspaceId: string, ym: string, lines: RatedLine[]): Promise<void> {
    const tx = this.txHost.tx;
    const column = <K extends keyof RatedLine>(key: K) => lines.map((line) => line[key]);
    await tx.query(
      `DELETE FROM billing_rated_lines
        WHERE workspace_id = $1 AND ym = $2 AND component = ANY($3::text[])
          AND (component, source_id) NOT IN (SELECT c, s FROM unnest($4::text[], $5::text[]) AS l(c, s))`,
      [workspaceId, ym, ALL_BILLING_COMPONENTS, column('component'), column('sourceId')],
    );
    if (!lines.length) return;
    await tx.query(
      `INSERT INTO billing_rated_lines (workspace_id, ym, component, source_id, quantity, unit, unit_price, amount)
       SELECT $1, $2, l.c, l.s, l.q::numeric, l.u, l.p::numeric, l.a::numeric
         FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[]) AS l(c, s, q, u, p, a)
       ON CONFLICT (workspace_id, ym, component, source_id) DO UPDATE
          SET quantity = EXCLUDED.quantity, unit = EXCLUDED.unit, unit_price = EXCLUDED.unit_price,
              amount = EXCLUDED.amount, rated_at = now()
        WHERE (billing_rated_lines.quantity, billing_rated_lines.unit, billing_rated_lines.unit_price, billing_rated_lines.amount)
              IS DISTINCT FROM (EXCLUDED.quantity, EXCLUDED.unit, EXCLUDED.unit_price, EXCLUDED.amount)`,
      [
        workspaceId,
        ym,
        column('component'),
        column('sourceId'),
        column('quantity'),
        column('unit'),
        column('unitPrice'),
        column('amount'),
      ],
    );
  }

  /** The month's total per component (rounded to cents, as text), by component. */
  totalsOfMonth(workspaceId: string, ym: string): Promise<{ component: string; total: string }[]> {
    return this.txHost.tx.query<{ component: string; total: string }[]>(
      `SELECT component, ROUND(SUM(amount), 2)::text AS total
         FROM billing_rated_lines WHERE workspace_id = $1 AND ym = $2
        GROUP BY component ORDER BY component`,
      [workspaceId, ym],
    );
  }
}
