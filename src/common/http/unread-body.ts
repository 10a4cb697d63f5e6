import { CanActivate, ExecutionContext, HttpStatus, Injectable } from '@nestjs/common';
import type { Request, RequestHandler } from 'express';
import { ApiException } from '../errors/api-exception';
import { ErrorCode } from '../errors/error-code';
import { isFormRoute } from './form-routes';

/**
 * What stands for a body a route that takes one must refuse (the validation pipe throws its
 * refusal); a route that takes none ignores it. Before routing, such a body was refused at once:
 * a route without a body then failed for one it ignores, and a caller without a token learnt what
 * the body was worth before being told it had no access.
 */
export abstract class RefusedBody {
  abstract refusal(): ApiException;
}

/** A body no parser read (see MarkUnreadBody). */
export class UnreadBody extends RefusedBody {
  constructor(readonly contentType: string | undefined) {
    super();
  }

  refusal(): ApiException {
    const sent = this.contentType ? `as ${this.contentType}` : 'with no Content-Type';
    return new ApiException(ErrorCode.BadRequest, `The request body must be application/json; it was sent ${sent}`, {
      status: HttpStatus.UNSUPPORTED_MEDIA_TYPE,
    });
  }
}

/** A body the JSON parser could not read: malformed, or in a charset it does not read. */
class UnparsableBody extends RefusedBody {
  constructor(
    private readonly status: HttpStatus,
    private readonly message: string,
  ) {
    super();
  }

  refusal(): ApiException {
    return new ApiException(ErrorCode.BadRequest, this.message, { status: this.status });
  }
}

/**
 * A JSON parser whose refusal of a body it cannot read (malformed JSON, a charset it does not read)
 * waits for the route: the body becomes a RefusedBody. Its other refusals stay immediate: a body too
 * large (reading it was the cost to bound) and one its Content-Encoding does not decode.
 */
export function refusingAtTheRoute(parse: RequestHandler): RequestHandler {
  return (req, res, next) => {
    void parse(req, res, (err?: unknown) => {
      const { type, message } = (err ?? {}) as { type?: unknown; message?: string };
      if (type === 'entity.parse.failed') req.body = new UnparsableBody(HttpStatus.BAD_REQUEST, 'Malformed JSON body');
      else if (type === 'charset.unsupported' && message)
        req.body = new UnparsableBody(HttpStatus.UNSUPPORTED_MEDIA_TYPE, message);
      else return next(err);
      next();
    });
  };
}

/**
 * For an Express router outside Nest's routes that reads `req.body` as it finds it (the queue
 * dashboard): a RefusedBody is refused in front of it, as the JSON parser refused it before.
 */
export const refuseRefusedBody: RequestHandler = (req, _res, next) =>
  next(req.body instanceof RefusedBody ? req.body.refusal() : undefined);

/**
 * Marks a body that no parser read: the JSON routes take application/json (the global JSON parser),
 * the `*∕*` routes any type (JsonBodyOfAnyType) and the form routes forms (FormBody, whose routes
 * answer any other body themselves, so they are left alone). Express 5 leaves `req.body` undefined
 * until a parser reads it; such a body becomes an UnreadBody, which the validation pipe refuses
 * with 415 on a route that takes a body (@Body()). Unread, a form or text body reached validation as
 * no body at all and was answered "databaseName must be a string", which names the wrong mistake.
 * A route that takes no body ignores it, and a request without one (no Content-Length above 0, no
 * chunked body with a type) is left to validation. A guard, so it runs after every middleware (the modules'
 * parsers included); it only marks, so the route's own guards answer first (a route switched off
 * answers as an unknown one, whatever its body).
 */
@Injectable()
export class MarkUnreadBody implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<Request>();
    if (req.body !== undefined || req.method === 'GET' || req.method === 'HEAD') return true;
    const length = req.headers['content-length'];
    const type = req.headers['content-type'];
    // A chunked body's length is not known before it is read: one without a type is taken for none
    // (a client writing an empty stream sends exactly that), and left to validation as before.
    const hasBody =
      length !== undefined ? Number(length) > 0 : req.headers['transfer-encoding'] !== undefined && type !== undefined;
    if (hasBody && !isFormRoute(req)) req.body = new UnreadBody(type);
    return true;
  }
}
