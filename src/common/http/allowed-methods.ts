import type { Request } from 'express';
import { ApiException } from '../errors/api-exception';
import { ErrorCode } from '../errors/error-code';

interface RouteLayer {
  route?: { path: string; methods: Record<string, boolean> };
  match(path: string): boolean;
}

/** Where an app keeps the routes it serves but hides (`METHOD /path` as registered). */
const HIDDEN_ROUTES = 'hiddenRoutes';

/**
 * Hides a route of a switched-off feature: it is left out of every `Allow`, so no method at its path
 * tells that it exists (its own guard answers it as noRouteFor does). Kept on the Express app, so
 * two apps in one process (the tests) each hide their own.
 */
export function hideRoute(app: { locals: Record<string, unknown> }, method: string, path: string): void {
  const hidden = (app.locals[HIDDEN_ROUTES] ??= new Set<string>()) as Set<string>;
  hidden.add(`${method.toUpperCase()} ${path}`);
}

/**
 * The methods the router serves at a path, so that a wrong method on a known path answers 405
 * with `Allow` instead of Express's 404.
 */
export function allowedMethods(req: Request): string[] {
  const stack = (req.app as unknown as { router?: { stack?: RouteLayer[] } }).router?.stack ?? [];
  const hidden = req.app.locals[HIDDEN_ROUTES] as Set<string> | undefined;
  const methods = new Set<string>();
  for (const layer of stack) {
    // Catch-all routes (registered for every method) say nothing about this path.
    if (!layer.route || layer.route.methods._all || Object.keys(layer.route.methods).length > 8) continue;
    try {
      if (!layer.match(req.path)) continue;
      for (const method of Object.keys(layer.route.methods).map((m) => m.toUpperCase())) {
        if (!hidden?.has(`${method} ${layer.route.path}`)) methods.add(method);
      }
    } catch {
      // a layer that cannot match this path
    }
  }
  return [...methods].sort();
}

/**
 * What a request no route serves is answered: 405 with `Allow` when the router serves other methods
 * at its path, else 404.
 */
export function noRouteFor(req: Request): ApiException {
  const allow = allowedMethods(req);
  if (!allow.length) return new ApiException(ErrorCode.EntityNotFound, `No route for ${req.method} ${req.path}`);
  return new ApiException(
    ErrorCode.UnsupportedOperation,
    `${req.method} is not supported on ${req.path}; use ${allow.join(', ')}`,
    {
      headers: { Allow: allow.join(', ') },
    },
  );
}
