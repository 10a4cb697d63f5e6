import {
  applyDecorators,
  CanActivate,
  createParamDecorator,
  ExecutionContext,
  Injectable,
  UseGuards,
} from '@nestjs/common';
import { ApiParam } from '@nestjs/swagger';
import type { Request } from 'express';
import type { AuthenticatedDeveloper } from '../auth/authenticated-developer';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { ApiErrors } from '../common/http/api-errors.decorator';
import type { WorkspaceEntity } from './workspace.entity';
import { WorkspacesService } from './workspaces.service';

type WorkspaceRequest = Request & { user?: AuthenticatedDeveloper; workspace?: WorkspaceEntity };

/** What a slug can look like (see slugify); anything else names no workspace, without asking the database. */
const POSSIBLE_SLUG = /^[A-Za-z0-9_-]{1,200}$/;

/**
 * Resolves `:workspaceSlug` once per request and checks membership. An unknown slug and a
 * workspace the caller does not belong to get the same 403, so slugs cannot be probed.
 */
@Injectable()
export class WorkspaceAccessGuard implements CanActivate {
  constructor(private readonly workspaces: WorkspacesService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<WorkspaceRequest>();
    const slug = req.params.workspaceSlug;
    const workspace =
      req.user && typeof slug === 'string' && POSSIBLE_SLUG.test(slug)
        ? await this.workspaces.findForMember(slug, req.user.id)
        : null;
    if (!workspace) {
      throw new ApiException(ErrorCode.UnauthorizedWorkspaceAccess, 'You do not have access to this workspace');
    }
    req.workspace = workspace;
    return true;
  }
}

/** Marks a controller or route as scoped to `/workspaces/:workspaceSlug` (membership required). */
export function WorkspaceScoped() {
  return applyDecorators(
    UseGuards(WorkspaceAccessGuard),
    ApiParam({ name: 'workspaceSlug', type: String, description: 'The workspace slug' }),
    ApiErrors(401, 403),
  );
}

/** The workspace resolved by WorkspaceAccessGuard. */
export const CurrentWorkspace = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): WorkspaceEntity => ctx.switchToHttp().getRequest<WorkspaceRequest>().workspace!,
);
