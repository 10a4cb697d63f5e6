import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { AppConfig } from '../config/app-config';
import { OperationsMetrics } from './operations-metrics';
import { type NodeMiddleware, requireOperator } from './operator-auth';
import { routeTemplateOf } from './route-template';

/**
 * Times every request into `http_request_duration_seconds` (by route template, method, status).
 * Installed first, so it sees requests refused by later middleware and guards too.
 */
export function installHttpMetrics(app: NestExpressApplication): void {
  const metrics = app.get(OperationsMetrics);
  app.use((req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.httpRequests.observe(
        { method: req.method, route: routeTemplateOf(req, res), status_code: String(res.statusCode) },
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
    if (req.path !== '/' || (req.method !== 'GET' && req.method !== 'HEAD')) return next();
    metrics.exposition().then(({ contentType, body }) => {
      res.setHeader('Content-Type', contentType);
      res.setHeader('Cache-Control', 'no-store');
      res.end(body);
    }, next);
  });
}
