import { messageOf } from './common/errors/message-of';
import { AppConfig } from './config/app-config';
import { InvalidEnvironmentError } from './config/environment';
import { migrateDatabase } from './database/data-source-options';
import { untilReachable } from './database/wait-for-database';

/**
 * What both entry points (and the CLI) do before Nest starts: validate the configuration (exit 1
 * listing every problem), wait up to DATABASE_BOOT_WAIT_SECONDS for the metadata database to be
 * reachable, create it if needed and run pending migrations.
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
  const waitSeconds = config.env.DATABASE_BOOT_WAIT_SECONDS;
  try {
    // A database started at the same moment (docker compose, a rebooted host) may not accept
    // connections yet: wait for it, for a bounded time.
    await untilReachable(() => migrateDatabase(config.env.DATABASE_URL), {
      waitMs: waitSeconds * 1000,
      onRetry: (err, delayMs) =>
        process.stderr.write(
          `The metadata database is not reachable yet (${describe(err)}); retrying in ${delayMs} ms (up to ${waitSeconds} s in all)\n`,
        ),
    });
  } catch (err) {
    process.stderr.write(`Could not prepare the metadata database: ${(err as Error).message}\n`);
    process.exit(1);
  }
  return config;
}

function describe(err: unknown): string {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  return typeof code === 'string' ? code : typeof message === 'string' ? message : String(err);
}

/**
 * Runs an entry point's start-up: a failure the operator can act on (a port in use, an address
 * not available: a system error) is one line and exit 1, not an unhandled rejection's stack; any
 * other failure is that line and its stack, for a bug report.
 */
export function runMain(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    const systemError = typeof (err as { syscall?: unknown } | null)?.syscall === 'string';
    const stack = !systemError && err instanceof Error && err.stack ? `\n${err.stack}` : '';
    process.stderr.write(`Could not start: ${messageOf(err)}${stack}\n`);
    process.exit(1);
  });
}
