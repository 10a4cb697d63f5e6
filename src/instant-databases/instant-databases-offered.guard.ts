import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { AppConfig } from '../config/app-config';

/**
 * With INSTANT_DATABASES=off, `POST /databases/provision` answers what an unknown route answers (the
 * exception filter's 404 for Nest's "Cannot POST …", same body, same headers). A guard, because guards
 * run before pipes: checked in the service, the route showed itself to any body the ValidationPipe
 * refuses (400). Thrown as that 404 itself, not as Nest's NotFoundException: the filter would answer
 * that one 405 (`GET /databases/{id}` matches the path).
 */
@Injectable()
export class InstantDatabasesOffered implements CanActivate {
  constructor(private readonly config: AppConfig) {}

  canActivate(context: ExecutionContext): boolean {
    if (this.config.env.INSTANT_DATABASES) return true;
    const req = context.switchToHttp().getRequest<Request>();
    throw new ApiException(ErrorCode.EntityNotFound, `No route for ${req.method} ${req.path}`);
  }
}
