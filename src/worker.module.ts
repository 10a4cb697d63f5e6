import { Module } from '@nestjs/common';
import { AppModule } from './app.module';
import { WorkerProbeModule } from './observability/worker-probe.module';

/** What the worker process boots: the feature modules (processors run) and its probe port. */
@Module({ imports: [AppModule, WorkerProbeModule] })
export class WorkerModule {}
