import { ApiException } from '../../common/errors/api-exception';
import { ErrorCode } from '../../common/errors/error-code';

/** The error codes of the token endpoint (RFC 6749 §5.2). */
export type TokenErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope';

/** Each RFC 6749 error beside the service's own errorCode and status, so both kinds of client understand it. */
const TOKEN_ERRORS: Record<TokenErrorCode, { errorCode: ErrorCode; status: number }> = {
  invalid_request: { errorCode: ErrorCode.InvalidRequest, status: 400 },
  invalid_client: { errorCode: ErrorCode.InvalidCredentials, status: 401 },
  invalid_grant: { errorCode: ErrorCode.BadRequest, status: 400 },
  unauthorized_client: { errorCode: ErrorCode.UnauthorizedClient, status: 400 },
  unsupported_grant_type: { errorCode: ErrorCode.BadRequest, status: 400 },
  invalid_scope: { errorCode: ErrorCode.BadRequest, status: 400 },
};

/** A token-endpoint error: `{error, error_description}` and `{errorCode, message, statusCode}` in one body. */
export function tokenError(error: TokenErrorCode, description: string): ApiException {
  const { errorCode, status } = TOKEN_ERRORS[error];
  const headers: Record<string, string> = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };
  // RFC 6749 §5.2: a 401 names the authentication scheme the client can use.
  if (error === 'invalid_client') headers['WWW-Authenticate'] = 'Basic realm="oauth2", charset="UTF-8"';
  return new ApiException(errorCode, description, {
    status,
    extra: { error, error_description: description },
    headers,
  });
}
