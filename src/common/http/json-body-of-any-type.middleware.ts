import { Injectable, NestMiddleware } from '@nestjs/common';
import { json, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { AppConfig } from '../../config/app-config';
import { refusingAtTheRoute } from './unread-body';

/**
 * The published API declares some request bodies as `*∕*` while their payload is JSON (the workspace
 * create, the credential rotation, the compute create and update, the subscription writes): parse
 * them as JSON whatever Content-Type the client sent (or none), a form's included: curl's `-d`
 * sends application/x-www-form-urlencoded, and no form parser runs on these routes (FormBody is
 * mounted only where forms are taken). Each module mounts it on those routes. A body the global
 * JSON parser has read already is left as it is; malformed JSON gets the usual 400 bad_request
 * (from the route: see refusingAtTheRoute).
 */
@Injectable()
export class JsonBodyOfAnyType implements NestMiddleware {
  private readonly parse: RequestHandler;

  constructor(config: AppConfig) {
    this.parse = refusingAtTheRoute(json({ type: () => true, limit: config.env.BODY_LIMIT_BYTES }));
  }

  use(req: Request, res: Response, next: NextFunction): void {
    void this.parse(req, res, next);
  }
}
