import type { Request } from 'express';
import type { AuthenticatedDeveloper } from '../auth/authenticated-developer';
import type { WorkspaceEntity } from './workspace.entity';

/** A request to a `/workspaces/:workspaceSlug` route, as authentication and the workspace guard leave it. */
export type WorkspaceRequest = Request & {
  user?: AuthenticatedDeveloper;
  /** The caller's membership of the slug's workspace, when authentication read it with the developer. */
  membership?: { slug: string; workspace: WorkspaceEntity | null };
  /** The workspace resolved by WorkspaceAccessGuard. */
  workspace?: WorkspaceEntity;
};

/** What a slug can look like (see slugify); anything else names no workspace, without asking the database. */
const POSSIBLE_SLUG = /^[A-Za-z0-9_-]{1,200}$/;

export function isPossibleSlug(slug: string): boolean {
  return POSSIBLE_SLUG.test(slug);
}
