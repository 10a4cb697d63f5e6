import { Module } from '@nestjs/common';
import { AppModule } from './app.module';
import { WorkerProbeModule } from './observability/worker-probe.module';
import { QueueProcessorsModule } from './queue-processors.module';

/**
 * The worker process: the same feature modules as the API with the queue processors (whatever
 * WORKERS says), and its probe port (WORKER_PORT: health and metrics).
 */
@Module({ imports: [AppModule, QueueProcessorsModule, WorkerProbeModule] })
export class WorkerModule {}
