import { createBullBoard } from '@bull-board/api';
import { BullAdapter } from '@bull-board/api/bullAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { json, type Request } from 'express';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import helmet from 'helmet';
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Logger } from 'nestjs-pino';
import { REQUIRED_SCOPE_EXTENSION } from './auth/required-scope';
import { isFormRoute } from './common/http/form-routes';
import { refuseRefusedBody, refusingAtTheRoute } from './common/http/unread-body';
import { answerClientErrors } from './common/http/client-errors';
import { declareOutages } from './common/http/api-errors.decorator';
import { AppConfig } from './config/app-config';
import { parseTrustProxy } from './config/trust-proxy';
import { installHttpMetrics, installMetricsEndpoint } from './observability/metrics-endpoint';
import { limitOperatorAttempts, requireOperator } from './observability/operator-auth';
import { JobDispatcher } from './queues/job-dispatcher';
import { ALL_QUEUES } from './queues/queue-names';

/** The version of the interface; the document's version adds a revision suffix (see interfaceRevision). */
export const API_VERSION = '0.1.0';

/**
 * The revision suffix of the document's version ("0.1.0-" followed by it, as the published document
 * carries): the first 7 hex digits of the SHA-256 of the document without its version. It changes
 * exactly when the interface as documented changes, and every build of the same app gives the same
 * one, so the committed openapi.json (checked against the app in CI) stays current from commit to
 * commit until the interface changes; a commit hash would make it stale at every commit.
 */
export function interfaceRevision(document: OpenAPIObject): string {
  const { version: _version, ...info } = document.info;
  return createHash('sha256')
    .update(JSON.stringify({ ...document, info }))
    .digest('hex')
    .slice(0, 7);
}

/**
 * The bearer scheme's note on scopes. OpenAPI 3.0 lets only oauth2 and openIdConnect requirements
 * list scopes (an http scheme's must be empty), and the published document's scheme is http bearer:
 * so each operation names its scope in an extension instead, as immich names its permissions.
 */
const BEARER_DESCRIPTION = [
  'An access token from `POST /oauth2/token` (an RS256 JWT).',
  `Each operation names the scope the token must carry in \`${REQUIRED_SCOPE_EXTENSION}\`:`,
  '`workspaces` (workspaces, members, invites, subscription, billing, the caller’s profile) or',
  '`databases` (databases, credentials, compute, regions and compute types, metrics and insights);',
  '`query` grants no operation of this API. A token that records no scope has every scope.',
  'A token without the scope is answered 403 `forbidden_operation`, with',
  '`WWW-Authenticate: Bearer error="insufficient_scope", scope="…"`.',
].join(' ');

/** Builds the OpenAPI document of the running app (served at /docs and written by `npm run openapi`). */
export function buildOpenApiDocument(app: NestExpressApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Database Control Plane API')
    .setDescription(
      'Self-hostable control plane for hosted PostgreSQL databases, compatible with the Nile control-plane API.',
    )
    .setVersion(API_VERSION)
    .addBearerAuth(
      { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: BEARER_DESCRIPTION },
      'jwtBearerAuth',
    )
    .addSecurityRequirements('jwtBearerAuth')
    .build();
  const document = declareOutages(
    SwaggerModule.createDocument(app, config, { operationIdFactory: (_controller, method) => method }),
  );
  document.info.version = `${API_VERSION}-${interfaceRevision(document)}`;
  return document;
}

/**
 * Everything the HTTP app needs beyond the module graph; shared by main.ts and the e2e tests so
 * they exercise the same stack.
 */
export function configureApp(app: NestExpressApplication): NestExpressApplication {
  const config = app.get(AppConfig);
  app.useLogger(app.get(Logger));
  installHttpMetrics(app);
  app.set('trust proxy', parseTrustProxy(config.env.TRUST_PROXY));
  app.disable('x-powered-by');
  // No ETag: API answers are small and change with state, no client sends conditional requests, and
  // hashing every body costs CPU on every response.
  app.set('etag', false);
  app.use(
    helmet({
      contentSecurityPolicy: { directives: { 'form-action': ["'self'", 'http:', 'https:'] } },
    }),
  );
  answerClientErrors(app.getHttpServer());
  // A GET's (or HEAD's) body has no meaning (RFC 9110) and no route reads one: it is not parsed, so
  // a malformed one is not refused either; nor is one sent to a form route (isFormRoute), whose
  // route answers it. One it cannot read is refused by the route, if the route takes a body.
  app.use(
    refusingAtTheRoute(
      json({
        limit: config.env.BODY_LIMIT_BYTES,
        type: (req: IncomingMessage) =>
          req.method !== 'GET' &&
          req.method !== 'HEAD' &&
          !isFormRoute(req) &&
          !!(req as Request).is('application/json'),
      }),
    ),
  );
  // Forms are read only on the routes that take them (FormBody); JsonBodyOfAnyType reads the rest.

  SwaggerModule.setup('docs', app, () => buildOpenApiDocument(app), {
    jsonDocumentUrl: 'docs-json',
    // Shows each operation's x-required-scope.
    swaggerOptions: { showExtensions: true },
  });

  // One budget of wrong attempts at the operator's credentials for every page they guard.
  const operatorAttempts = limitOperatorAttempts(config.env.RATE_LIMIT_AUTH_PER_MINUTE);
  if (config.env.OPERATOR_PASSWORD) {
    const board = new ExpressAdapter();
    board.setBasePath('/admin/queues');
    const jobs = app.get(JobDispatcher);
    createBullBoard({ queues: ALL_QUEUES.map((name) => new BullAdapter(jobs.queue(name))), serverAdapter: board });
    app.use(
      '/admin/queues',
      operatorAttempts,
      // The same check as /metrics: a refusal is 401 with the error body and a Basic challenge.
      requireOperator(config.env.OPERATOR_PASSWORD),
      refuseRefusedBody,
      board.getRouter(),
    );
  }
  installMetricsEndpoint(app, operatorAttempts);
  return app;
}
