import type { Request } from 'express';
import type { AuthenticatedDeveloper } from '../auth/authenticated-developer';
import type { DatabaseEntity } from '../databases/database.entity';
import type { WorkspaceEntity } from './workspace.entity';

/** A request to a `/workspaces/:workspaceSlug` route, as authentication and the workspace guard leave it. */
export type WorkspaceRequest = Request & {
  user?: AuthenticatedDeveloper;
  /**
   * What authentication read with the developer, in the same statement: their membership of the
   * slug's workspace and, on `:databaseName` routes, that database (null: there is none).
   */
  membership?: {
    slug: string;
    workspace: WorkspaceEntity | null;
    database?: { name: string; row: DatabaseEntity | null };
  };
  /** The workspace resolved by WorkspaceAccessGuard. */
  workspace?: WorkspaceEntity;
};

/** What a slug can look like (see slugify); anything else names no workspace, without asking the database. */
const POSSIBLE_SLUG = /^[A-Za-z0-9_-]{1,200}$/;

export function isPossibleSlug(slug: string): boolean {
  return POSSIBLE_SLUG.test(slug);
}
