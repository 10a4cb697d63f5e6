import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiResponse, ApiSchema } from '@nestjs/swagger';
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
};

/** Documents the error responses of an operation with the shared error body. */
export function ApiErrors(...statuses: number[]) {
  return applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({ status, description: DESCRIPTIONS[status] ?? 'Error', type: ApiErrorResponse }),
    ),
  );
}
