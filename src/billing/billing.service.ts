import { Injectable } from '@nestjs/common';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { billingMonthOf, parseBillingMonth, YM_FORMAT_MESSAGE } from './billing-month';
import { BillingRater } from './billing-rater.service';
import type { WorkspaceMonthlyTotalsDto } from './monthly-totals.response';
import { RatedLinesRepository } from './rated-lines.repository';
import { ALL_BILLING_COMPONENTS } from './rating';

@Injectable()
export class BillingService {
  constructor(
    private readonly rater: BillingRater,
    private readonly lines: RatedLinesRepository,
  ) {}

  /**
   * The month's totals per component from its rated lines, rated first so they are fresh. The
   * current month is accrued to date; a month later than the current one is refused.
   */
  async totals(workspace: WorkspaceEntity, ym: string): Promise<WorkspaceMonthlyTotalsDto> {
    const month = parseBillingMonth(ym);
    if (!month) throw new ApiException(ErrorCode.BadRequest, YM_FORMAT_MESSAGE);
    const now = new Date();
    const current = billingMonthOf(now);
    if (month.start.getTime() > current.start.getTime()) {
      throw new ApiException(ErrorCode.BadRequest, `ym must not be later than the current month (${current.ym})`);
    }
    // Accrued up to the moment the rating holds the month (a rating waiting for another rates after it).
    await this.rater.rate(workspace.id, month);
    const rows = await this.lines.totalsOfMonth(workspace.id, month.ym);
    const cents: Record<string, number> = Object.fromEntries(ALL_BILLING_COMPONENTS.map((c) => [c, 0]));
    for (const row of rows) cents[row.component] = Math.round(Number(row.total) * 100);
    // `total` is the sum of the components as shown (in cents), so the figures always add up.
    const total = Object.values(cents).reduce((sum, c) => sum + c, 0);
    const totals: Record<string, number> = {};
    for (const [component, c] of Object.entries(cents)) totals[component] = c / 100;
    totals.total = total / 100;
    return { ym: month.ym, totals };
  }
}
