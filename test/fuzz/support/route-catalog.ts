import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { ModulesContainer } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { getMetadataStorage, ValidationTypes } from 'class-validator';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The routes to fuzz, read from the running app: the Express router table (what really answers)
 * joined with each handler's Nest metadata (which parameter is the body, the query, which DTO class
 * each has) and each DTO's class-validator metadata (its fields and their rules). A new route or a
 * new DTO field is fuzzed without anyone listing it.
 */

/** One rule of a DTO field, as class-validator stores it (`isString`, `maxLength` [100], `isIn` [[…]]…). */
export interface FieldRule {
  name: string;
  constraints: unknown[];
}

export interface DtoField {
  name: string;
  optional: boolean;
  rules: FieldRule[];
}

export interface DtoShape {
  className: string;
  fields: DtoField[];
}

export interface CatalogRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  /** Express form: `/workspaces/:workspaceSlug/databases`. */
  path: string;
  pathParams: string[];
  /** The body DTO, when the handler takes one class-validated body (not `Record<string, unknown>`). */
  body?: DtoShape;
  /** The query DTO, when the handler takes a whole `@Query()` class. */
  query?: DtoShape;
  /** Single query parameters taken one by one (`@Query('code')`). */
  queryParams: string[];
  /** Whether the handler takes a body at all (a DTO or a free-form record). */
  takesBody: boolean;
  /** Response statuses the published OpenAPI document lists (absent for the HTML pages it leaves out). */
  documented?: number[];
  /** `Class.method`, for messages. */
  handler: string;
}

const METHODS: Partial<Record<RequestMethod, CatalogRoute['method']>> = {
  [RequestMethod.GET]: 'GET',
  [RequestMethod.POST]: 'POST',
  [RequestMethod.PUT]: 'PUT',
  [RequestMethod.DELETE]: 'DELETE',
  [RequestMethod.PATCH]: 'PATCH',
};

// RouteParamtypes of @nestjs/common (BODY = 3, QUERY = 4, PARAM = 5); the enum is not exported from the package root.
const BODY = 3;
const QUERY = 4;

interface RouteArg {
  index: number;
  data?: unknown;
}

type Constructor = abstract new (...args: never[]) => unknown;

function joinPath(...parts: string[]): string {
  const joined = parts
    .map((p) => p.replace(/^\/+|\/+$/g, ''))
    .filter(Boolean)
    .join('/');
  return `/${joined}`;
}

/** The fields of a DTO class and their rules, from class-validator's metadata storage. */
export function dtoShape(cls: Constructor): DtoShape | undefined {
  const storage = getMetadataStorage();
  const metas = storage.getTargetValidationMetadatas(cls, '', true, false);
  if (!metas.length) return undefined;
  const fields = new Map<string, DtoField>();
  for (const meta of metas) {
    const field = fields.get(meta.propertyName) ?? { name: meta.propertyName, optional: false, rules: [] };
    fields.set(meta.propertyName, field);
    if (meta.type === ValidationTypes.CONDITIONAL_VALIDATION) {
      field.optional = true;
      continue;
    }
    if (meta.type === ValidationTypes.WHITELIST) continue;
    const constraintName = meta.constraintCls
      ? storage.getTargetValidatorConstraints(meta.constraintCls)[0]?.name
      : undefined;
    field.rules.push({ name: meta.name ?? constraintName ?? meta.type, constraints: meta.constraints ?? [] });
  }
  return { className: cls.name, fields: [...fields.values()] };
}

interface ExpressLayer {
  route?: { path: string; methods: Record<string, boolean> };
}

/** `METHOD /path` of every route the Express router table answers (what a client can reach). */
export function expressRoutes(app: NestExpressApplication): string[] {
  const express = app.getHttpAdapter().getInstance() as unknown as { router: { stack: ExpressLayer[] } };
  return express.router.stack
    .filter((layer) => layer.route && typeof layer.route.path === 'string' && !layer.route.methods._all)
    .flatMap((layer) => Object.keys(layer.route!.methods).map((m) => `${m.toUpperCase()} ${layer.route!.path}`))
    .filter((r) => !r.startsWith('HEAD '));
}

function documentedStatuses(): Map<string, number[]> {
  const doc = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'openapi.json'), 'utf8')) as {
    paths: Record<string, Record<string, { responses?: Record<string, unknown> }>>;
  };
  const result = new Map<string, number[]>();
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const expressPath = path.replace(/\{([^}]+)\}/g, ':$1');
      result.set(`${method.toUpperCase()} ${expressPath}`, Object.keys(operation.responses ?? {}).map(Number));
    }
  }
  return result;
}

/** Every controller route of the app, with what it takes. */
export function routeCatalog(app: NestExpressApplication): CatalogRoute[] {
  const documented = documentedStatuses();
  const routes: CatalogRoute[] = [];
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype as Constructor | null;
      if (!controller) continue;
      const prefixes = ([] as string[]).concat(
        (Reflect.getMetadata(PATH_METADATA, controller) as string | string[] | undefined) ?? '/',
      );
      const proto = controller.prototype as Record<string, unknown>;
      for (const name of Object.getOwnPropertyNames(proto)) {
        if (name === 'constructor' || typeof proto[name] !== 'function') continue;
        const handler = proto[name] as object;
        const requestMethod = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        const method = requestMethod === undefined ? undefined : METHODS[requestMethod];
        if (!method) continue;
        const paths = ([] as string[]).concat(
          (Reflect.getMetadata(PATH_METADATA, handler) as string | string[]) ?? '/',
        );
        const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, name) ?? {}) as Record<string, RouteArg>;
        const types = (Reflect.getMetadata('design:paramtypes', proto, name) ?? []) as Constructor[];
        let body: DtoShape | undefined;
        let query: DtoShape | undefined;
        let takesBody = false;
        const queryParams: string[] = [];
        for (const [key, arg] of Object.entries(args)) {
          const type = Number(key.split(':')[0]);
          if (type === BODY) {
            takesBody = true;
            if (arg.data === undefined && types[arg.index]) body = dtoShape(types[arg.index]);
          }
          if (type === QUERY) {
            if (typeof arg.data === 'string') queryParams.push(arg.data);
            else if (types[arg.index]) query = dtoShape(types[arg.index]);
          }
        }
        for (const prefix of prefixes) {
          for (const sub of paths) {
            const path = joinPath(prefix, sub);
            routes.push({
              method,
              path,
              pathParams: [...path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1]),
              body,
              query,
              queryParams,
              takesBody,
              documented: documented.get(`${method} ${path}`),
              handler: `${controller.name}.${name}`,
            });
          }
        }
      }
    }
  }
  return routes.sort((a, b) => `${a.path} ${a.method}`.localeCompare(`${b.path} ${b.method}`));
}
