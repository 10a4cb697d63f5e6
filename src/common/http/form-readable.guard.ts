import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Request } from 'express';
import { formReadError } from './form-body.middleware';

/**
 * Refuses a request whose form FormBody could not read, with the parser's error as Express's error
 * handler would have passed it on (the adapter's mapping: 413, 415 or 400 as an HttpException), but
 * inside the route, so the route's filter answers it: a page on the browser forms, an RFC 6749 error
 * on the token endpoint. Applied first on every route FormBody reads, before the attempts limit: an
 * unreadable form is no attempt.
 */
@Injectable()
export class FormReadable implements CanActivate {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  canActivate(context: ExecutionContext): boolean {
    const error = formReadError(context.switchToHttp().getRequest<Request>());
    if (error !== undefined) throw this.adapterHost.httpAdapter.mapException(error);
    return true;
  }
}
