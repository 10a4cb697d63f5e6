import { HttpException } from '@nestjs/common';
import { ErrorCode, httpStatusOf } from './error-code';

export interface ErrorBody {
  errorCode: ErrorCode;
  message: string;
  statusCode: number;
  [extra: string]: unknown;
}

/**
 * The one exception services throw. Its status comes from the ErrorCode table, except where a
 * protocol fixes a different status for the same code (`status`, e.g. 413 for a too large body).
 * `extra` fields are merged into the body (the OAuth token endpoint adds `error`, `error_description`).
 */
export class ApiException extends HttpException {
  readonly code: ErrorCode;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { status?: number; extra?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    const statusCode = options.status ?? httpStatusOf(code);
    super({ errorCode: code, message, statusCode, ...options.extra } satisfies ErrorBody, statusCode);
    this.code = code;
    this.headers = options.headers ?? {};
  }

  get body(): ErrorBody {
    return this.getResponse() as ErrorBody;
  }
}
