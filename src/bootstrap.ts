import { AppConfig } from './config/app-config';
import { InvalidEnvironmentError } from './config/environment';
import { migrateDatabase } from './database/data-source-options';

/**
 * What both entry points do before Nest starts: validate the configuration (exit 1 listing every
 * problem), create the metadata database if needed and run pending migrations.
 */
export async function bootstrapChecks(): Promise<AppConfig> {
  let config: AppConfig;
  try {
    config = AppConfig.fromEnvironment();
  } catch (err) {
    if (err instanceof InvalidEnvironmentError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  try {
    await migrateDatabase(config.env.DATABASE_URL);
  } catch (err) {
    process.stderr.write(`Could not prepare the metadata database: ${(err as Error).message}\n`);
    process.exit(1);
  }
  return config;
}
