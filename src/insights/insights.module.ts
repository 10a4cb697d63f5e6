import { Module } from '@nestjs/common';
import { DatabasesModule } from '../databases/databases.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { InsightsController } from './insights.controller';
import { InsightsRepository } from './insights.repository';
import { InsightsService } from './insights.service';
import { StorageUsage } from './storage-usage.service';
import { TelemetrySampler } from './telemetry-sampler.service';

/** Database insights (uptime, errors, query performance) and storage metering, from the sampler's samples. */
@Module({
  imports: [DatabasesModule, WorkspacesModule],
  controllers: [InsightsController],
  providers: [InsightsRepository, InsightsService, TelemetrySampler, StorageUsage],
  exports: [StorageUsage, TelemetrySampler],
})
export class InsightsModule {}
