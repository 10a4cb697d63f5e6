import { Module } from '@nestjs/common';
import { HealthModule } from '../health/health.module';
import { WorkerProbeServer } from './worker-probe.server';

/** Only the worker imports this: its probe and metrics port. */
@Module({
  imports: [HealthModule],
  providers: [WorkerProbeServer],
  exports: [WorkerProbeServer],
})
export class WorkerProbeModule {}
