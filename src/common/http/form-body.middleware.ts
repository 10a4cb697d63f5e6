import { Injectable, NestMiddleware } from '@nestjs/common';
import { urlencoded, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { AppConfig } from '../../config/app-config';

/** Why the form parser could not read a request's body (FormReadable throws it), by request. */
const unreadableForms = new WeakMap<Request, unknown>();

/** The form parser's error for this request, if it could not read the body. */
export function formReadError(req: Request): unknown {
  return unreadableForms.get(req);
}

/**
 * Reads an application/x-www-form-urlencoded body, on the routes that take forms only (the token
 * endpoint, the login page, the invite join page: each module mounts it on its own). A form parser
 * for every route would read the JSON payload of a `*∕*` route sent with curl's default form type
 * (`curl -d '{"name":"x"}'`) as a form before JsonBodyOfAnyType could read it as JSON; elsewhere a
 * body comes as application/json.
 *
 * A body it cannot read (a charset it does not know, a Content-Encoding that does not decode or is
 * unknown, too large) is not passed on as a middleware error: that would reach only the global filter,
 * whose JSON is neither the token endpoint's RFC 6749 error nor the page a browser form answers. The
 * error is kept for the request and the route's first guard, FormReadable, throws it, so the route's
 * own filter answers it. Every route this is mounted on must apply FormReadable first.
 */
@Injectable()
export class FormBody implements NestMiddleware {
  private readonly parse: RequestHandler;

  constructor(config: AppConfig) {
    this.parse = urlencoded({ limit: config.env.BODY_LIMIT_BYTES, extended: false });
  }

  use(req: Request, res: Response, next: NextFunction): void {
    void this.parse(req, res, (err?: unknown) => {
      if (err) unreadableForms.set(req, err);
      next();
    });
  }
}
