import { Injectable, NestMiddleware } from '@nestjs/common';
import { urlencoded, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { AppConfig } from '../../config/app-config';

/**
 * Reads an application/x-www-form-urlencoded body, on the routes that take forms only (the token
 * endpoint, the login page, the invite join page: each module mounts it on its own). A form parser
 * for every route would read the JSON payload of a `*∕*` route sent with curl's default form type
 * (`curl -d '{"name":"x"}'`) as a form before JsonBodyOfAnyType could read it as JSON; elsewhere a
 * body comes as application/json.
 */
@Injectable()
export class FormBody implements NestMiddleware {
  private readonly parse: RequestHandler;

  constructor(config: AppConfig) {
    this.parse = urlencoded({ limit: config.env.BODY_LIMIT_BYTES, extended: false });
  }

  use(req: Request, res: Response, next: NextFunction): void {
    void this.parse(req, res, next);
  }
}
