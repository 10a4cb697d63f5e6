import { Module } from '@nestjs/common';
import { ComputeUsagePeriodsModule } from '../compute/compute-usage-periods.module';
import { DatabasesModule } from '../databases/databases.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { ComputeUsagePeriods } from './compute-usage-periods.service';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';

/** Compute metrics; also the read side of compute usage periods that billing rates. */
@Module({
  imports: [ComputeUsagePeriodsModule, DatabasesModule, WorkspacesModule],
  controllers: [MetricsController],
  providers: [ComputeUsagePeriods, MetricsService],
  exports: [ComputeUsagePeriods],
})
export class MetricsModule {}
