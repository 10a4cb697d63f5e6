import type { INestApplicationContext, LoggerService } from '@nestjs/common';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/**
 * Makes an HTTP server stoppable at once: after `stop()` it accepts no connection, closes idle
 * keep-alive connections, and answers any request still arriving on a busy one with
 * `Connection: close`, while requests in flight finish. Installed before the app handles requests,
 * so it sees every request first.
 */
export function drainable(server: Server): { stop(): void } {
  let stopping = false;
  const inFlight = new InFlight();
  server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
    if (stopping) res.setHeader('Connection', 'close');
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
  });
  return {
    stop() {
      if (stopping) return;
      stopping = true;
      server.close();
      for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
      // A response already under way keeps its connection; once it ends the connection is idle.
      server.closeIdleConnections();
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      sweep.unref();
      server.once('close', () => clearInterval(sweep));
    },
  };
}

const SLOT = Symbol('in-flight slot');
type Tracked = ServerResponse & { [SLOT]?: number };

/**
 * The responses under way, in an array where each remembers its index (a removal moves the last one
 * into its place). Not a Set: V8 links each hash table a Set replaces (it rehashes as deletions
 * accumulate) to its successor, entries and all, so a Set with an add and a delete per request left
 * dead tables in the old generation pointing at young responses, and scavenges promoted those
 * requests' objects (README, Performance).
 */
export class InFlight implements Iterable<ServerResponse> {
  private readonly responses: Tracked[] = [];

  add(res: Tracked): void {
    res[SLOT] = this.responses.push(res) - 1;
  }

  delete(res: Tracked): void {
    const slot = res[SLOT];
    if (slot === undefined) return;
    res[SLOT] = undefined;
    const last = this.responses.pop() as Tracked;
    if (last !== res) {
      this.responses[slot] = last;
      last[SLOT] = slot;
    }
  }

  [Symbol.iterator](): Iterator<ServerResponse> {
    return this.responses.values();
  }
}

/**
 * How long a graceful shutdown may take before the process exits 1 regardless (a request or job that
 * does not end). A supervisor must wait longer than this before it kills the process
 * (docker-compose.yml's `stop_grace_period`), or the bound is its, not ours.
 */
export const SHUTDOWN_FORCE_EXIT_MS = 30000;

/**
 * Graceful shutdown for both entry points: on SIGTERM/SIGINT stop accepting requests at once, let
 * in-flight requests and the current job finish, close the pools, then exit 0 (exit 1 after
 * SHUTDOWN_FORCE_EXIT_MS).
 */
export function closeOnSignals(app: INestApplicationContext, logger: LoggerService, server?: Server): void {
  const http = server ? drainable(server) : undefined;
  let closing = false;
  const close = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    logger.log(`${signal} received: shutting down`);
    http?.stop();
    // Connections being closed may fail a last in-flight command; that must not turn a clean
    // shutdown into a crash.
    process.on('unhandledRejection', (reason) => {
      logger.warn(`ignored during shutdown: ${String(reason)}`);
    });
    const force = setTimeout(() => process.exit(1), SHUTDOWN_FORCE_EXIT_MS);
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
