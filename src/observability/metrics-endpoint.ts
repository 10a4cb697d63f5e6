import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { AppConfig } from '../config/app-config';
import { OperationsMetrics } from './operations-metrics';
import { ErrorCode } from '../common/errors/error-code';
import { type NodeMiddleware, requireOperator, writeError } from './operator-auth';
import { routeTemplateOf } from './route-template';

/** The status of a request whose client closed the connection before the answer was sent (nginx's). */
const CLIENT_CLOSED_REQUEST = '499';

/**
 * Times every request into `http_request_duration_seconds` (by route template, method, status).
 * Installed first, so it sees requests refused by later middleware and guards too. Observed at
 * `close`, which comes after the answer is sent and also when the client goes away first (a load
 * balancer's or a client's timeout, where `finish` never comes): such a request counts as 499, for
 * as long as its client waited, so the slowest requests are not the ones missing.
 */
export function installHttpMetrics(app: NestExpressApplication): void {
  const metrics = app.get(OperationsMetrics);
  app.use((req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    res.once('close', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const status = res.writableFinished ? String(res.statusCode) : CLIENT_CLOSED_REQUEST;
      metrics.httpRequests.observe(
        { method: req.method, route: routeTemplateOf(req, res), status_code: status },
        seconds,
      );
    });
    next();
  });
}

/**
 * `GET /metrics` (Prometheus text format) behind the operator's basic credentials, like the queue
 * dashboard, and their `attempts` limit (limitOperatorAttempts); not served at all without
 * OPERATOR_PASSWORD.
 */
export function installMetricsEndpoint(app: NestExpressApplication, attempts: NodeMiddleware): void {
  const password = app.get(AppConfig).env.OPERATOR_PASSWORD;
  if (!password) return;
  const metrics = app.get(OperationsMetrics);
  app.use('/metrics', attempts, requireOperator(password), (req: Request, res: Response, next: NextFunction) => {
    if (req.path !== '/') return next();
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      // As the worker's /metrics answers it.
      return writeError(res, 405, ErrorCode.UnsupportedOperation, `${req.method} is not supported; use GET`, {
        Allow: 'GET, HEAD',
      });
    }
    metrics.exposition().then(({ contentType, body }) => {
      res.setHeader('Content-Type', contentType);
      res.setHeader('Cache-Control', 'no-store');
      res.end(body);
    }, next);
  });
}
