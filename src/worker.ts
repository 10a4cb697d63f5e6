import 'reflect-metadata';
import './worker-mode';
import { NestFactory } from '@nestjs/core';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { bootstrapChecks } from './bootstrap';
import { closeOnSignals } from './shutdown';

/** The queue processors alone: the same modules as the API, as an application context without HTTP. */
async function main(): Promise<void> {
  await bootstrapChecks();
  const app = await NestFactory.createApplicationContext(AppModule, { bufferLogs: true });
  const logger = app.get(Logger);
  app.useLogger(logger);
  closeOnSignals(app, logger);
  await app.init();
  logger.log('worker started');
}

void main();
