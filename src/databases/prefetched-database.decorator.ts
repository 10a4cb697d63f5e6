import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { WorkspaceRequest } from '../workspaces/workspace-request';
import type { DatabaseEntity } from './database.entity';

/**
 * The `:databaseName` database of the route's workspace as authentication read it, in the statement
 * that loaded the developer and their membership (the rule of DatabasesService.findOperable), on a
 * route marked `@AuthenticationReads('routeDatabase')`: null when there is no such database,
 * undefined when it was not read (then ask findOperable).
 */
export const PrefetchedDatabase = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): DatabaseEntity | null | undefined => {
    const req = ctx.switchToHttp().getRequest<WorkspaceRequest>();
    const prefetched = req.membership?.database;
    const sameWorkspace = req.workspace !== undefined && req.membership?.workspace?.id === req.workspace.id;
    return prefetched && sameWorkspace && prefetched.name === req.params.databaseName ? prefetched.row : undefined;
  },
);
