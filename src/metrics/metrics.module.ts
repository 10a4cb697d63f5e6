import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ComputeUsagePeriodEntity } from '../compute/compute-usage-period.entity';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { ComputeUsagePeriods } from './compute-usage-periods.service';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';

/** Compute metrics; also the read side of compute usage periods that billing rates. */
@Module({
  imports: [TypeOrmModule.forFeature([ComputeUsagePeriodEntity]), WorkspacesModule],
  controllers: [MetricsController],
  providers: [ComputeUsagePeriods, MetricsService],
  exports: [ComputeUsagePeriods],
})
export class MetricsModule {}
