import { Controller, Get, Param } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { CurrentWorkspace, WorkspaceScoped } from '../workspaces/workspace-access.guard';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { BillingService } from './billing.service';
import { WorkspaceMonthlyTotalsDto } from './monthly-totals.response';
import { RequiredScope } from '../auth/required-scope';

@ApiTags('billing')
@Controller('workspaces/:workspaceSlug/billing')
@RequiredScope('workspaces')
@WorkspaceScoped()
export class BillingController {
  constructor(private readonly billing: BillingService) {}

  @Get(':ym/totals')
  @ApiOperation({
    operationId: 'totals',
    summary: 'Monthly totals by component, from rated lines',
    description:
      'US dollars per component for the month `ym` (`YYYY-MM`, UTC), rated from the sources when read: `compute` = instance-hours in the month × hourly cost of each dedicated compute usage period (databases deleted since included), `subscription` = monthly price of the level × the fraction of the month it was held (FREE 0, PRO PRO_MONTHLY_PRICE_USD), `storage` = GB-months held (each database size, sampled every TELEMETRY_INTERVAL_SECONDS, × the seconds each sample stands for, over 10^9 bytes × the seconds of the month: the average GB held over the month) × STORAGE_PRICE_PER_GB_MONTH_USD, less FREE_STORAGE_INCLUDED_GB GB-months while on FREE or without a subscription (closed: held to FREE; prorated; never below 0). Subscription and storage are priced at the prices recorded for the month when it was first rated (a change of the configuration applies from the next month on); compute at the hourly cost each usage period carries. Each component is the sum of its exact lines rounded to cents; `total` is the sum of the components. Every key is present (0 when nothing). The current month is accrued up to now; a later month is 400. A request body is ignored.',
  })
  @ApiParam({ name: 'ym', type: String, example: '2025-03', description: 'Year and month, YYYY-MM' })
  @ApiOkResponse({ type: WorkspaceMonthlyTotalsDto })
  @ApiErrors(400)
  totals(@CurrentWorkspace() workspace: WorkspaceEntity, @Param('ym') ym: string): Promise<WorkspaceMonthlyTotalsDto> {
    return this.billing.totals(workspace, ym);
  }
}
