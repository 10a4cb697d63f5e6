import { Global, Module } from '@nestjs/common';
import { AppConfig } from './app-config';

/**
 * Provides the validated, typed AppConfig. It is read from the environment when the application
 * is created (not when this file is imported), so each app instance sees the environment it was started with.
 */
@Global()
@Module({
  providers: [{ provide: AppConfig, useFactory: () => AppConfig.fromEnvironment() }],
  exports: [AppConfig],
})
export class ConfigModule {}
