import { CanActivate, ExecutionContext, HttpStatus, Injectable } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import type { Request } from 'express';
import { ApiException } from '../errors/api-exception';
import { ErrorCode } from '../errors/error-code';
import { isFormRoute } from './form-routes';

/** Whether a handler takes its request's body (@Body()), by handler; read once. */
const takesBody = new WeakMap<object, boolean>();

function handlerTakesBody(context: ExecutionContext): boolean {
  const handler = context.getHandler();
  let known = takesBody.get(handler);
  if (known === undefined) {
    const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, context.getClass(), handler.name) ?? {}) as object;
    known = Object.keys(args).some((key) => key.split(':')[0] === String(RouteParamtypes.BODY));
    takesBody.set(handler, known);
  }
  return known;
}

/**
 * Refuses, with 415, a body that no parser read on a route that reads its body: the JSON routes
 * take application/json (the global JSON parser), the `*∕*` routes any type (JsonBodyOfAnyType) and
 * the form routes forms (FormBody, whose routes answer any other body themselves). Unread, a form or text body would reach validation as no body at
 * all and be answered "databaseName must be a string", which names the wrong mistake. Express 5
 * leaves `req.body` undefined until a parser reads it. A route that takes no body ignores one, and a
 * request without a body (no Content-Length above 0, no Transfer-Encoding) is left to validation.
 */
@Injectable()
export class JsonBodyRead implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<Request>();
    if (req.body !== undefined || req.method === 'GET' || req.method === 'HEAD') return true;
    const length = req.headers['content-length'];
    const hasBody = req.headers['transfer-encoding'] !== undefined || (length !== undefined && Number(length) > 0);
    if (!hasBody || isFormRoute(req) || !handlerTakesBody(context)) return true;
    const type = req.headers['content-type'];
    throw new ApiException(
      ErrorCode.BadRequest,
      `The request body must be application/json; it was sent ${type ? `as ${type}` : 'with no Content-Type'}`,
      { status: HttpStatus.UNSUPPORTED_MEDIA_TYPE },
    );
  }
}
