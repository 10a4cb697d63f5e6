import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiExtension } from '@nestjs/swagger';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { scopeNames, scopeSetOf, type Scope, type ScopeSet } from './oauth/scopes';

/** The metadata key of a route's scope, kept as a ScopeSet: what the guard tests a token's scopes against. */
export const REQUIRED_SCOPE = 'auth:requiredScope';

/** The OpenAPI extension naming an operation's scope (the bearer scheme cannot carry scopes in OpenAPI 3.0). */
export const REQUIRED_SCOPE_EXTENSION = 'x-required-scope';

/**
 * The scope an access token must carry for the route: on a controller for all its routes, on a
 * handler for that route (overriding its controller's). The global guard (JwtAuthGuard) answers a
 * token without it 403; every route that is not @Public() declares one, or the app refuses to start
 * (RouteScopeCheck; the guard would ask such a route for every scope). The OpenAPI document
 * names it on the operation; the operation's 403 is documented with its other errors (a second
 * ApiResponse for the same status would repeat its description), and the document's spec checks
 * that every scoped operation lists one.
 */
export function RequiredScope(scope: Scope) {
  return applyDecorators(SetMetadata(REQUIRED_SCOPE, scopeSetOf(scope)), ApiExtension(REQUIRED_SCOPE_EXTENSION, scope));
}

/**
 * The answer to a valid token (granting `granted`) without the scopes a route needs (`required`):
 * 403 with the error body naming what is missing, and RFC 6750's `insufficient_scope` challenge
 * naming the scope the route needs (§3.1), so the client knows what to ask for.
 */
export function insufficientScope(required: ScopeSet, granted: ScopeSet): ApiException {
  const missing = scopeNames(required & ~granted);
  const message = missing.includes(' ')
    ? `The access token lacks the ${missing} scopes this operation needs`
    : `The access token lacks the ${missing} scope this operation needs`;
  return new ApiException(ErrorCode.ForbiddenOperation, message, {
    headers: { 'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${scopeNames(required)}"` },
  });
}
