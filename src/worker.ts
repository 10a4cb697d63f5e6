import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Logger } from 'nestjs-pino';
import { bootstrapChecks, runMain } from './bootstrap';
import { closeOnSignals } from './shutdown';
import { WorkerModule } from './worker.module';

/**
 * The queue processors alone (WorkerModule): the same feature modules as the API, as an application
 * context without the API's HTTP server; only its probe port (WORKER_PORT) listens.
 */
async function main(): Promise<void> {
  await bootstrapChecks();
  const app = await NestFactory.createApplicationContext(WorkerModule, { bufferLogs: true });
  const logger = app.get(Logger);
  app.useLogger(logger);
  closeOnSignals(app, logger);
  await app.init();
  logger.log('worker started');
}

runMain(main);
