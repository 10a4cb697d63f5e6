import {
  applyDecorators,
  CanActivate,
  createParamDecorator,
  ExecutionContext,
  Injectable,
  UseGuards,
} from '@nestjs/common';
import { ApiParam } from '@nestjs/swagger';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { ApiErrors } from '../common/http/api-errors.decorator';
import type { WorkspaceEntity } from './workspace.entity';
import { isPossibleSlug, type WorkspaceRequest } from './workspace-request';
import { WorkspacesService } from './workspaces.service';

/**
 * Resolves `:workspaceSlug` once per request and checks membership. An unknown slug and a
 * workspace the caller does not belong to get the same 403, so slugs cannot be probed. The JWT
 * strategy reads the membership together with the developer (one statement); the guard asks on
 * its own only when it did not.
 */
@Injectable()
export class WorkspaceAccessGuard implements CanActivate {
  constructor(private readonly workspaces: WorkspacesService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<WorkspaceRequest>();
    const slug = req.params.workspaceSlug;
    let workspace: WorkspaceEntity | null = null;
    if (req.user && typeof slug === 'string' && isPossibleSlug(slug)) {
      // Authentication usually read the membership with the developer, in the same statement.
      workspace =
        req.membership?.slug === slug
          ? req.membership.workspace
          : await this.workspaces.findForMember(slug, req.user.id);
    }
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
