import { Module } from '@nestjs/common';
import { AppModule } from './app.module';
import { QueueProcessorsModule } from './queue-processors.module';

/** The worker process: the same feature modules as the API, with the queue processors, whatever WORKERS says. */
@Module({ imports: [AppModule, QueueProcessorsModule] })
export class WorkerModule {}
