import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import type { AuthenticatedDeveloper } from './authenticated-developer';

/** The developer behind the request's bearer token (set by the JWT strategy). */
export const CurrentDeveloper = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): AuthenticatedDeveloper =>
    ctx.switchToHttp().getRequest<Request & { user: AuthenticatedDeveloper }>().user,
);
