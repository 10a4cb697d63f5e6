import { RequestMethod } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';

/** A route as MiddlewareConsumer.forRoutes takes it. */
interface FormRoute {
  path: string;
  method: RequestMethod;
}

/**
 * The routes that take forms (the token endpoint, the login form, the invite join form): FormBody
 * reads their bodies (each module mounts it on its own), and the global JSON parser leaves them
 * alone, so a malformed JSON body sent there is answered by the route (an RFC 6749 error, a page),
 * as the form parser's refusals are, not by the JSON parser's global error.
 */
export const TOKEN_FORM: FormRoute = { path: 'oauth2/token', method: RequestMethod.POST };
export const LOGIN_FORM: FormRoute = { path: 'authorize', method: RequestMethod.POST };
export const JOIN_FORM: FormRoute = { path: 'invites/join', method: RequestMethod.POST };

const FORM_PATHS = new Set([TOKEN_FORM, LOGIN_FORM, JOIN_FORM].map((route) => `/${route.path}`));

/** Whether the request is for a form route: as Express routes it, case-insensitive, a trailing slash allowed. */
export function isFormRoute(req: IncomingMessage): boolean {
  if (req.method !== 'POST') return false;
  const path = (req.url ?? '').split('?')[0].toLowerCase().replace(/\/+$/, '');
  return FORM_PATHS.has(path);
}
