import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import type { Request } from 'express';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';

/** The caller's workspaces, oldest first, each with the ids of its live databases, oldest first. */
export type OwnWorkspaces = { workspace: WorkspaceEntity; databaseIds: string[] }[];

export type OwnProfileRequest = Request & { readsOwnProfile?: boolean; ownWorkspaces?: OwnWorkspaces };

export const READS_OWN_PROFILE = 'auth:readsOwnProfile';

/**
 * On this route, authentication reads the caller's workspaces and their database ids in the same
 * statement that loads the developer (one round trip for `/developers/me` instead of three).
 */
export const AuthenticationReadsOwnProfile = () => SetMetadata(READS_OWN_PROFILE, true);

/** What authentication read for AuthenticationReadsOwnProfile. */
export const OwnProfile = createParamDecorator((_: unknown, ctx: ExecutionContext): OwnWorkspaces => {
  const workspaces = ctx.switchToHttp().getRequest<OwnProfileRequest>().ownWorkspaces;
  if (!workspaces) throw new Error('OwnProfile needs @AuthenticationReadsOwnProfile() on the route');
  return workspaces;
});
