import { Module } from '@nestjs/common';
import { InsightsModule } from '../insights/insights.module';
import { MetricsModule } from '../metrics/metrics.module';
import { SubscriptionsModule } from '../subscriptions/subscriptions.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { BillingRater } from './billing-rater.service';
import { BillingController } from './billing.controller';
import { BillingService } from './billing.service';
import { MonthPricesRepository } from './month-prices.repository';
import { RatedLinesRepository } from './rated-lines.repository';

@Module({
  imports: [WorkspacesModule, SubscriptionsModule, MetricsModule, InsightsModule],
  controllers: [BillingController],
  providers: [RatedLinesRepository, MonthPricesRepository, BillingRater, BillingService],
  exports: [BillingRater],
})
export class BillingModule {}
