import { Module } from '@nestjs/common';
import type { Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import { LoggerModule } from 'nestjs-pino';
import { destination } from 'pino';
import { AppConfig } from '../config/app-config';
import { routeTemplateOf } from '../observability/route-template';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Keys whose values are secrets. */
const SECRET_KEYS = [
  'password',
  'client_secret',
  'clientSecret',
  'refresh_token',
  'code_verifier',
  'code',
  'access_token',
  'passwordHash',
  'secretHash',
  'passwordCiphertext',
];

/**
 * The keys this code logs objects under. Named rather than matched with a leading `*`: pino runs a
 * leading-wildcard path over every key of every line, which cost about 100 µs of CPU per request
 * (a third of the request log's cost; measured with `npm run bench`), where a named key costs only
 * on the lines that have it.
 */
const LOGGED_OBJECTS = [
  'err',
  'error',
  'details',
  'body',
  'data',
  'job',
  'payload',
  'credential',
  'developer',
  'config',
];

/** Paths pino blanks out wherever they appear in a log line. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  // The OAuth redirect carries the authorization code in its query.
  'res.headers.location',
  ...SECRET_KEYS,
  // An error's `code` is a machine code (a SQLSTATE, ECONNREFUSED), never an authorization code.
  ...LOGGED_OBJECTS.flatMap((object) =>
    SECRET_KEYS.filter((key) => !(key === 'code' && object.startsWith('err'))).map((key) => `${object}.${key}`),
  ),
  'err.config.password',
];

/** Structured JSON logs with a request id on every line (X-Request-Id honoured and echoed). */
@Module({
  imports: [
    LoggerModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        pinoHttp: [
          {
            level: config.env.LOG_LEVEL,
            redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
            genReqId: (req, res) => {
              const given = req.headers['x-request-id'];
              const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
              res.setHeader('X-Request-Id', id);
              return id;
            },
            // Query strings can carry codes (the OAuth redirect, invite links): log the path only.
            // Headers of neither the request nor the response are logged.
            serializers: {
              req: (req: { id: string; method: string; url: string }) => ({
                id: req.id,
                method: req.method,
                path: req.url.split('?')[0],
              }),
              res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
            },
            // The one line per request: the request (id, method, path) is bound to every line of it;
            // the completion line adds the route template, the status and the duration.
            customAttributeKeys: { responseTime: 'durationMs' },
            customSuccessObject: (req, res, value: object) => ({
              ...value,
              route: routeTemplateOf(req as Request, res as Response),
            }),
            customErrorObject: (req, res, _err, value: object) => ({
              ...value,
              route: routeTemplateOf(req as Request, res as Response),
            }),
            customLogLevel: (_req, res, err) =>
              err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info',
          },
          // Written synchronously (pino's default): an asynchronous destination showed no clear gain
          // per request, and CI twice saw the graceful-shutdown spec fail while it was in place.
          destination({ dest: 1, sync: true }),
        ],
      }),
    }),
  ],
})
export class LoggingModule {}
