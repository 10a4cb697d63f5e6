import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiResponse, ApiSchema, getSchemaPath, type OpenAPIObject } from '@nestjs/swagger';
import { ErrorCode } from '../errors/error-code';

/** `APIError` of the published API: the body of every error response. */
@ApiSchema({ name: 'APIError' })
export class ApiErrorResponse {
  @ApiProperty({ enum: ErrorCode, enumName: 'ErrorCode' })
  errorCode!: ErrorCode;
  @ApiProperty({ minLength: 1 })
  message!: string;
  @ApiProperty({ type: 'integer', format: 'int32' })
  statusCode!: number;
}

const DESCRIPTIONS: Record<number, string> = {
  400: 'Bad request: the body or a parameter is not valid',
  401: 'Unauthorized: credentials missing or expired',
  403: 'Forbidden: the credentials do not grant access to the resource',
  404: 'Not found',
  405: 'Method not allowed: the path answers only the methods in Allow',
  409: 'Conflict: the entity already exists or is not in a state that allows this',
  415: 'Unsupported media type: the body must be application/json',
  429: 'Too many requests',
  503: 'Service unavailable: a dependency (the metadata database, Redis or a data-plane server) did not answer; nothing was changed unless the message says otherwise. Retry after Retry-After seconds',
};

const RETRY_AFTER = {
  'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer' as const } },
};

/** Documents the error responses of an operation with the shared error body. */
export function ApiErrors(...statuses: number[]) {
  return applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({
        status,
        description: DESCRIPTIONS[status] ?? 'Error',
        type: ApiErrorResponse,
        ...(status === 503 ? { headers: RETRY_AFTER } : {}),
      }),
    ),
  );
}

/**
 * Adds the 503 of a dependency outage to every operation that answers errors and declares none of
 * its own: each reads the metadata database at least, and answers 503 with Retry-After while it (or
 * Redis, or the data-plane server it needs) does not answer (see AllExceptionsFilter). Operations
 * that answer no error (static documents, the liveness probe) are left as they are.
 */
export function declareOutages(document: OpenAPIObject): OpenAPIObject {
  for (const item of Object.values(document.paths)) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch'] as const) {
      const responses = item[method]?.responses;
      if (!responses || responses['503'] || !Object.keys(responses).some((status) => Number(status) >= 400)) continue;
      responses['503'] = {
        description: DESCRIPTIONS[503],
        headers: RETRY_AFTER,
        content: { 'application/json': { schema: { $ref: getSchemaPath('APIError') } } },
      };
    }
  }
  return document;
}
