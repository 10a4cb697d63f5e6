import { Injectable, NestMiddleware } from '@nestjs/common';
import { json, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { AppConfig } from '../../config/app-config';

/**
 * The published API declares some request bodies as `*∕*` while their payload is JSON (the workspace
 * create, the credential rotation, the compute create and update, the subscription writes): parse
 * them as JSON whatever Content-Type the client sent (or none). Each module mounts it on those routes. Bodies the global
 * parsers have read already (application/json, forms) are left as they are; malformed JSON gets
 * the usual 400 bad_request.
 */
@Injectable()
export class JsonBodyOfAnyType implements NestMiddleware {
  private readonly parse: RequestHandler;

  constructor(config: AppConfig) {
    this.parse = json({ type: () => true, limit: config.env.BODY_LIMIT_BYTES });
  }

  use(req: Request, res: Response, next: NextFunction): void {
    void this.parse(req, res, next);
  }
}
