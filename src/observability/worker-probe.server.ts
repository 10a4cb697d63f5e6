import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown, OnModuleDestroy } from '@nestjs/common';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { AppConfig } from '../config/app-config';
import { OUTAGE_RETRY_AFTER_SECONDS } from '../common/errors/dependency-outage';
import { Readiness } from '../health/readiness';
import { OperationsMetrics } from './operations-metrics';
import { limitOperatorAttempts, requireOperator, writeError } from './operator-auth';

/**
 * The worker's small HTTP port (WORKER_PORT): `/health/live`, `/health/ready` (the metadata
 * PostgreSQL and Redis answer; 503 once shutdown has begun) and `/metrics` (operator credentials,
 * only with OPERATOR_PASSWORD). The worker has no API,
 * so this is a plain Node server, not a Nest HTTP app (which would serve every controller).
 */
@Injectable()
export class WorkerProbeServer implements OnApplicationBootstrap, OnModuleDestroy, OnApplicationShutdown {
  private readonly logger = new Logger(WorkerProbeServer.name);
  private server?: Server;
  private draining = false;
  private readonly operatorAttempts;

  constructor(
    private readonly config: AppConfig,
    private readonly readiness: Readiness,
    private readonly metrics: OperationsMetrics,
  ) {
    this.operatorAttempts = limitOperatorAttempts(config.env.RATE_LIMIT_AUTH_PER_MINUTE);
  }

  async onApplicationBootstrap(): Promise<void> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        this.logger.error({ err: String(err), path: req.url }, 'probe request failed');
        if (!res.headersSent) writeError(res, 500, ErrorCode.InternalError, 'An unexpected error occurred');
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.config.env.WORKER_PORT, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    this.logger.log({ port: this.port }, 'worker probes listening');
  }

  /** The port it listens on (WORKER_PORT, or the one picked for 0). */
  get port(): number {
    return (this.server?.address() as AddressInfo | null)?.port ?? 0;
  }

  /** The first shutdown hook Nest runs: readiness is 503 while the queues finish their jobs after it. */
  onModuleDestroy(): void {
    this.draining = true;
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return writeError(res, 405, ErrorCode.UnsupportedOperation, `${req.method} is not supported; use GET`, {
        Allow: 'GET, HEAD',
      });
    }
    switch (path) {
      case '/health/live':
        return writeJson(res, 200, { status: 'ok' });
      case '/health/ready':
        return this.ready(res);
      case '/metrics':
        if (this.config.env.OPERATOR_PASSWORD) return this.exposition(req, res, this.config.env.OPERATOR_PASSWORD);
        break;
    }
    writeError(res, 404, ErrorCode.EntityNotFound, `No route for ${req.method} ${path}`);
  }

  /** The worker's metrics, behind the operator's credentials and their attempts limit as on the API. */
  private async exposition(req: IncomingMessage, res: ServerResponse, password: string): Promise<void> {
    let allowed = false;
    await this.operatorAttempts(req, res, () => requireOperator(password)(req, res, () => (allowed = true)));
    if (!allowed) return;
    const { contentType, body } = await this.metrics.exposition();
    res.writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-store' });
    res.end(body);
  }

  private async ready(res: ServerResponse): Promise<void> {
    if (this.draining) {
      return writeError(res, 503, ErrorCode.ServerError, 'Not ready: shutting down', {
        'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS),
      });
    }
    try {
      writeJson(res, 200, await this.readiness.check());
    } catch (err) {
      if (!(err instanceof ApiException)) throw err;
      writeError(res, err.getStatus(), err.code, err.body.message, err.headers);
    }
  }
}

function writeJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}
