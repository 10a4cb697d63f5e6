import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { ThrottlerException } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import { QueryFailedError } from 'typeorm';
import { noRouteFor } from '../http/allowed-methods';
import { ApiException, ErrorBody } from './api-exception';
import { isDependencyOutage, OUTAGE_RETRY_AFTER_SECONDS } from './dependency-outage';
import { ErrorCode } from './error-code';

interface PgError {
  code?: string;
  detail?: string;
  constraint?: string;
  table?: string;
}

/**
 * PostgreSQL errors caused by a value the caller sent: invalid text representation (22P02), too
 * long (22001), out of range (22003), bad date/time (22007), a NUL character (22021, text cannot
 * hold one) and a character the encoding lacks (22P05).
 */
const INVALID_VALUE_CODES = new Set(['22P02', '22001', '22003', '22007', '22021', '22P05']);

/**
 * PostgreSQL errors that say nothing about the request and are gone on a retry: a serialization
 * failure (40001), a deadlock (40P01) and a statement cancelled by a server-side statement timeout
 * (57014). Nothing here runs at SERIALIZABLE and every lock path takes its locks in one order, so
 * none is expected; should one happen, the client is told to retry (503), not that it broke (500).
 */
const RETRYABLE_CODES = new Set(['40001', '40P01', '57014']);

/**
 * Writes every error as `{errorCode, message, statusCode}`: ApiExceptions as thrown, Nest/Express
 * HTTP errors mapped by status, an unavailable dependency to 503 with Retry-After, PostgreSQL
 * constraint violations to 409/400, anything else to a 500 whose details stay in the log.
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw exception;
    const res = host.switchToHttp().getResponse<Response>();
    const req = host.switchToHttp().getRequest<Request>();
    const { body, headers } = this.toBody(exception, req);
    if (body.statusCode >= 500) {
      this.logger.error(
        { err: loggable(exception), path: req.path, method: req.method },
        `${body.errorCode}: ${body.message}`,
      );
    }
    if (res.headersSent) return;
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    this.send(res, body);
  }

  /** Writes the answer's body (its headers are set): JSON for the API, a page for a browser form. */
  protected send(res: Response, body: ErrorBody): void {
    res.status(body.statusCode).json(body);
  }

  private toBody(exception: unknown, req: Request): { body: ErrorBody; headers: Record<string, string> } {
    if (exception instanceof ApiException) return { body: exception.body, headers: exception.headers };
    if (exception instanceof ThrottlerException) {
      return { body: body(ErrorCode.ThresholdExceeded, 'Too many requests; retry later', 429), headers: {} };
    }
    if (exception instanceof HttpException) {
      if (exception.getStatus() === 404 && exception.message.startsWith('Cannot ')) {
        const answer = noRouteFor(req);
        return { body: answer.body, headers: answer.headers };
      }
      return { body: this.fromHttpException(exception, req), headers: {} };
    }
    if (isDependencyOutage(exception)) {
      return {
        body: body(ErrorCode.ServerError, 'A service this request needs is unavailable; retry later', 503),
        headers: { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) },
      };
    }
    if (exception instanceof QueryFailedError) {
      const pg = exception.driverError as PgError;
      if (pg.code === '23505') {
        return { body: body(ErrorCode.DuplicateEntity, `Duplicate entity: ${describeUnique(pg)}`, 409), headers: {} };
      }
      if (pg.code === '23503' || pg.code === '23514' || pg.code === '23502') {
        return {
          body: body(ErrorCode.ConstraintViolation, 'The request violates a data constraint', 400),
          headers: {},
        };
      }
      if (INVALID_VALUE_CODES.has(pg.code ?? '')) {
        return { body: body(ErrorCode.BadRequest, 'A value in the request is not valid', 400), headers: {} };
      }
      if (RETRYABLE_CODES.has(pg.code ?? '')) {
        return {
          body: body(ErrorCode.ServerError, 'The request met concurrent work and was rolled back; retry it', 503),
          headers: { 'Retry-After': '1' },
        };
      }
    }
    const typed = exception as { type?: string; status?: number; expose?: boolean };
    // body-parser errors that reached us without being HttpExceptions
    if (typed?.type === 'entity.parse.failed')
      return { body: body(ErrorCode.BadRequest, 'Malformed JSON body', 400), headers: {} };
    if (typed?.type === 'entity.too.large')
      return { body: body(ErrorCode.BadRequest, 'Request body is too large', 413), headers: {} };
    return { body: body(ErrorCode.InternalError, 'An unexpected error occurred', 500), headers: {} };
  }

  private fromHttpException(exception: HttpException, req: Request): ErrorBody {
    const status: number = exception.getStatus();
    const response = exception.getResponse();
    const detail: unknown = typeof response === 'object' && 'message' in response ? response.message : undefined;
    const message = Array.isArray(detail)
      ? detail.join('; ')
      : typeof detail === 'string' && detail
        ? detail
        : exception.message;
    // A body its Content-Encoding does not decode (zlib's own error, which Nest hides as "Bad Request").
    if (status === 400 && /^Z_/.test((exception.cause as { code?: string } | undefined)?.code ?? '')) {
      const encoding = String(req.headers['content-encoding'] ?? '');
      return body(
        ErrorCode.BadRequest,
        `The request body could not be decoded as its Content-Encoding (${encoding}) says`,
        status,
      );
    }
    switch (status) {
      case 404: // not found (an unknown route's is noRouteFor's, above)
        return body(ErrorCode.EntityNotFound, message, status);
      case 401: // unauthorized
        return body(ErrorCode.InvalidCredentials, 'Missing, invalid or expired bearer token', status);
      case 403: // forbidden
        return body(ErrorCode.ForbiddenOperation, message, status);
      case 405: // method not allowed
        return body(ErrorCode.UnsupportedOperation, message, status);
      case 409: // conflict
        return body(ErrorCode.DuplicateEntity, message, status);
      case 413: // payload too large
        return body(ErrorCode.BadRequest, 'Request body is too large', status);
      case 429: // too many requests
        return body(ErrorCode.ThresholdExceeded, message, status);
      default:
        if (status >= 500) return body(ErrorCode.InternalError, 'An unexpected error occurred', status);
        if (status === 400 && /JSON/i.test(message)) return body(ErrorCode.BadRequest, 'Malformed JSON body', status);
        return body(ErrorCode.BadRequest, message || 'Bad request', status);
    }
  }
}

/** What of an error goes to the log: never a failed query's parameters (they can hold hashes or ciphertexts). */
function loggable(exception: unknown): unknown {
  if (exception instanceof QueryFailedError) {
    const pg = exception.driverError as PgError;
    return {
      type: 'QueryFailedError',
      message: exception.message,
      code: pg.code,
      constraint: pg.constraint,
      stack: exception.stack,
    };
  }
  return exception;
}

function body(errorCode: ErrorCode, message: string, statusCode: number): ErrorBody {
  return { errorCode, message, statusCode };
}

function describeUnique(pg: PgError): string {
  const match = /\((.+)\)=\((.+)\)/.exec(pg.detail ?? '');
  return match ? `${match[1]} '${match[2]}' already exists` : (pg.constraint ?? 'already exists');
}
