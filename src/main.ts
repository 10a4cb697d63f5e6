import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { ApiModule } from './api.module';
import { configureApp } from './app.setup';
import { Logger } from 'nestjs-pino';
import { bootstrapChecks, runMain } from './bootstrap';
import { closeOnSignals } from './shutdown';

async function main(): Promise<void> {
  const config = await bootstrapChecks();
  const app = await NestFactory.create<NestExpressApplication>(ApiModule.forRoot({ workers: config.workersEnabled }), {
    bufferLogs: true,
    bodyParser: false,
  });
  configureApp(app);
  closeOnSignals(app, app.get(Logger), app.getHttpServer());
  await app.listen(config.env.PORT);
}

runMain(main);
