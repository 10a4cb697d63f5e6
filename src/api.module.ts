import { DynamicModule, Module } from '@nestjs/common';
import { AppModule } from './app.module';
import { QueueProcessorsModule } from './queue-processors.module';

/** The HTTP API process: every feature module, and the queue processors too unless told otherwise (WORKERS=off). */
@Module({})
export class ApiModule {
  static forRoot(options: { workers: boolean }): DynamicModule {
    return { module: ApiModule, imports: [AppModule, ...(options.workers ? [QueueProcessorsModule] : [])] };
  }
}
