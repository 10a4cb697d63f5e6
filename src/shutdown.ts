import type { INestApplicationContext, LoggerService } from '@nestjs/common';

/**
 * Graceful shutdown for both entry points: on SIGTERM/SIGINT stop accepting requests, let
 * in-flight requests and the current job finish, close the pools, then exit 0.
 */
export function closeOnSignals(app: INestApplicationContext, logger: LoggerService): void {
  let closing = false;
  const close = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    logger.log(`${signal} received: shutting down`);
    // Connections being closed may fail a last in-flight command; that must not turn a clean
    // shutdown into a crash.
    process.on('unhandledRejection', (reason) => {
      logger.warn(`ignored during shutdown: ${String(reason)}`);
    });
    const force = setTimeout(() => process.exit(1), 30000);
    force.unref();
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error(`shutdown failed: ${String(err)}`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', close);
  process.once('SIGINT', close);
}
