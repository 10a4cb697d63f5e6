import { Injectable, type Type } from '@nestjs/common';
import { PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { scopeNames, type ScopeSet } from './oauth/scopes';
import { IS_PUBLIC } from './public.decorator';
import { REQUIRED_SCOPE } from './required-scope';

/** What a route handler declares about access: public, or the scope a token needs. */
export interface RouteAccess {
  /** `Class.method`, for the message. */
  where: string;
  isPublic: boolean;
  /** Its @RequiredScope (the handler's, else its controller's), as the guard reads it. */
  scopes: ScopeSet | undefined;
}

const reflector = new Reflector();

/**
 * Every route handler of the application's controllers, read as the global guard reads them
 * (handler first, then controller). Runs while providers are built: controllers are registered
 * by then, so their classes are read, not their instances.
 */
export function discoverRouteAccess(discovery: DiscoveryService, scanner: MetadataScanner): RouteAccess[] {
  const routes: RouteAccess[] = [];
  for (const wrapper of discovery.getControllers()) {
    const type = wrapper.metatype as Type | undefined;
    if (!type) continue;
    const prototype = type.prototype as Record<string, unknown>;
    for (const method of scanner.getAllMethodNames(prototype)) {
      const handler = prototype[method];
      // A route handler is a method with a path (what Nest's router explorer maps).
      if (typeof handler !== 'function' || Reflect.getMetadata(PATH_METADATA, handler) === undefined) continue;
      const targets = [handler, type];
      routes.push({
        where: `${type.name}.${method}`,
        isPublic: reflector.getAllAndOverride<boolean | undefined>(IS_PUBLIC, targets) === true,
        scopes: reflector.getAllAndOverride<ScopeSet | undefined>(REQUIRED_SCOPE, targets),
      });
    }
  }
  return routes;
}

/**
 * What keeps the routes from saying who may call them: a route that is not @Public() must declare
 * its scope, and a public one must not (nothing would check it). An empty list means none.
 */
export function routeScopeProblems(routes: readonly RouteAccess[]): string[] {
  const problems: string[] = [];
  for (const route of routes) {
    if (!route.isPublic && !route.scopes) {
      problems.push(`${route.where} needs a token but declares no @RequiredScope (or is it @Public()?)`);
    }
    if (route.isPublic && route.scopes) {
      problems.push(
        `${route.where} is @Public(), so its @RequiredScope('${scopeNames(route.scopes)}') is never checked`,
      );
    }
  }
  return problems;
}

/** Throws, naming every problem, unless every authenticated route declares its scope. */
export function assertEveryRouteScoped(routes: readonly RouteAccess[]): void {
  const problems = routeScopeProblems(routes);
  if (problems.length) {
    throw new Error(
      `Every route needs @Public() or a @RequiredScope (src/auth/required-scope.ts):\n${problems
        .map((p) => `  - ${p}`)
        .join('\n')}`,
    );
  }
}

/**
 * Part of every app that has the global guard (AuthModule): it refuses to start while a route that
 * needs a token declares no scope, so a new route cannot quietly accept every token (the guard
 * would ask such a route for every scope, which only full tokens have). The same habit as
 * JobHandlerCheck: the check is made while the providers are built, before anything listens.
 */
@Injectable()
export class RouteScopeCheck {
  constructor(discovery: DiscoveryService, scanner: MetadataScanner) {
    assertEveryRouteScoped(discoverRouteAccess(discovery, scanner));
  }
}
