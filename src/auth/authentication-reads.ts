import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import type { Request } from 'express';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import type { ScopeSet } from './oauth/scopes';

/**
 * What a route's handler needs that authentication can read in the statement that loads the
 * developer (one round trip instead of two or three): `routeDatabase`, the `:databaseName` database
 * of the route's workspace (see PrefetchedDatabase); `ownProfile`, the caller's workspaces and their
 * database ids (see OwnProfile). Routes that ask for nothing pay for nothing.
 */
export type AuthenticationRead = 'routeDatabase' | 'ownProfile';

export const AUTHENTICATION_READS = 'auth:reads';

export const AuthenticationReads = (what: AuthenticationRead) => SetMetadata(AUTHENTICATION_READS, what);

/**
 * The caller's workspaces, oldest first, each with the ids of its live databases, oldest first, as
 * PostgreSQL aggregated them: 16 bytes an id, one after another (empty when none). A caller may see
 * 100k databases; the ids go from PostgreSQL into the response (withUuidArray) without
 * becoming 100k strings in between.
 */
export type OwnWorkspaces = { workspace: WorkspaceEntity; databaseIds: Uint8Array }[];

export type AuthenticatingRequest = Request & {
  authenticationReads?: AuthenticationRead;
  /** The scopes the route needs (its @RequiredScope); JwtStrategy refuses a token without them. Every scope when unset. */
  requiredScopes?: ScopeSet;
  ownWorkspaces?: OwnWorkspaces;
};

/** What authentication read for `@AuthenticationReads('ownProfile')`. */
export const OwnProfile = createParamDecorator((_: unknown, ctx: ExecutionContext): OwnWorkspaces => {
  const workspaces = ctx.switchToHttp().getRequest<AuthenticatingRequest>().ownWorkspaces;
  if (!workspaces) throw new Error("OwnProfile needs @AuthenticationReads('ownProfile') on the route");
  return workspaces;
});
