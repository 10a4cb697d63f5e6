import type { Request, Response } from 'express';

/** Mounted pages: paths under them that no route template matched (static files) count as the mount point. */
const MOUNTED = ['/docs', '/admin/queues', '/metrics'];

/**
 * The route template a request matched (`/workspaces/:workspaceSlug/databases`), never the raw
 * path, so metric labels and log fields stay few whatever clients send; `unmatched` for a path no
 * route serves. Read once the response is finished (the router sets `req.route` while dispatching).
 */
export function routeTemplateOf(req: Request, res: Response): string {
  const cached = res.locals.routeTemplate as string | undefined;
  if (cached) return cached;
  const route = (req as { route?: { path?: unknown } }).route;
  const path = req.originalUrl.split('?')[0];
  // Nest answers unknown paths from a catch-all route (`{/*splat}`): that is no template either.
  const template =
    route && typeof route.path === 'string' && !route.path.includes('*')
      ? `${req.baseUrl}${route.path}`
      : (MOUNTED.find((prefix) => path === prefix || path.startsWith(`${prefix}/`)) ?? 'unmatched');
  res.locals.routeTemplate = template;
  return template;
}
