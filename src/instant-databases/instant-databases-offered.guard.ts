import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { noRouteFor } from '../common/http/allowed-methods';
import { AppConfig } from '../config/app-config';

/**
 * With INSTANT_DATABASES=off, `POST /databases/provision` answers what an unknown route beside it
 * answers (the exception filter's for Nest's "Cannot POST …", same body, same headers): 405 with
 * `Allow: GET`, since `GET /databases/{id}` matches the path. A guard, because guards run before
 * pipes: checked in the service, the route showed itself to any body the ValidationPipe refuses
 * (400). The module hides the route (hideRoute), so no `Allow` names its method.
 */
@Injectable()
export class InstantDatabasesOffered implements CanActivate {
  constructor(private readonly config: AppConfig) {}

  canActivate(context: ExecutionContext): boolean {
    if (this.config.env.INSTANT_DATABASES) return true;
    const req = context.switchToHttp().getRequest<Request>();
    throw noRouteFor(req);
  }
}
