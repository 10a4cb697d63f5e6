import type { OpenAPIObject } from '@nestjs/swagger';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApiDocument } from '../../src/app.setup';
import { withBuiltApi } from '../support/built-api';

interface Response {
  description?: string;
  content?: Record<string, { schema?: { $ref?: string } }>;
}
interface Operation {
  summary?: string;
  requestBody?: unknown;
  security?: unknown[];
  responses?: Record<string, Response>;
  'x-required-scope'?: unknown;
}
import { createTestApp, TestApp } from '../support/test-app';

const root = join(__dirname, '..', '..');
const committedDocument = () => JSON.parse(readFileSync(join(root, 'openapi.json'), 'utf8')) as OpenAPIObject;

/** The first 7 hex digits of the SHA-256 of the document without its version (computed here independently). */
function revisionOf(document: OpenAPIObject): string {
  const { version: _version, ...info } = document.info;
  return createHash('sha256')
    .update(JSON.stringify({ ...document, info }))
    .digest('hex')
    .slice(0, 7);
}

/** Operations that take no request body by design (the published API declares none). */
const NO_BODY = new Set(['POST /workspaces/{workspaceSlug}/databases/{databaseName}/credentials']);
/**
 * The published document's request bodies declared `*∕*` (the app reads them as JSON whatever their
 * Content-Type, json-body-of-any-type.e2e-spec), with whether it requires one.
 */
const PUBLISHED_ANY_TYPE_BODIES: Record<string, { required: boolean }> = {
  'POST /workspaces': { required: true },
  'POST /workspaces/{workspaceSlug}/databases/{databaseName}/credentials/rotate': { required: false },
  'POST /workspaces/{workspaceSlug}/databases/{databaseName}/compute': { required: true },
  'PUT /workspaces/{workspaceSlug}/databases/{databaseName}/compute/{instanceId}': { required: true },
  'POST /workspaces/{workspaceSlug}/subscription': { required: true },
  'PUT /workspaces/{workspaceSlug}/subscription': { required: true },
};
/** Operations that cannot fail but with a 500 (static documents, the liveness probe). */
const NO_ERRORS = new Set([
  'GET /.well-known/oauth-authorization-server',
  'GET /.well-known/jwks.json',
  'GET /health/live',
]);
/** The token endpoint's errors carry RFC 6749's fields beside the error body. */
const ERROR_SCHEMAS = ['#/components/schemas/APIError', '#/components/schemas/TokenErrorBody'];

function operations(document: OpenAPIObject): [string, Operation][] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    (['get', 'post', 'put', 'patch', 'delete'] as const)
      .filter((method) => item[method])
      .map((method) => [`${method.toUpperCase()} ${path}`, item[method] as Operation] as [string, Operation]),
  );
}

/**
 * Checked twice: as the app under test builds it, and as committed in openapi.json, which the built
 * app serves (compiled with the @nestjs/swagger CLI plugin, which jest's compiler does not run; CI
 * fails when the file is stale).
 */
describe.each(['built by the app under test', 'committed as openapi.json'])(
  'the OpenAPI document behind /docs, %s',
  (source) => {
    let t: TestApp | undefined;
    let document: OpenAPIObject;
    beforeAll(async () => {
      if (source.startsWith('committed')) {
        document = committedDocument();
        return;
      }
      t = await createTestApp();
      document = buildOpenApiDocument(t.app);
    });
    afterAll(() => t?.close());

    it('carries the version 0.1.0 followed by a revision suffix that is a digest of the rest of the document', () => {
      expect(document.info.version).toMatch(/^0\.1\.0-[0-9a-f]{7}$/);
      expect(document.info.version).toBe(`0.1.0-${revisionOf(document)}`);
    });

    if (!source.startsWith('committed')) {
      it('gets the same version from every build of the document', () => {
        expect(buildOpenApiDocument(t!.app).info.version).toBe(document.info.version);
      });

      it('serves the same version at /docs-json', async () => {
        const served = await t!.http.get('/docs-json').expect(200);
        expect(served.body.info.version).toBe(document.info.version);
      });
    }

    it('gives every operation a summary', () => {
      const missing = operations(document)
        .filter(([, op]) => !op.summary?.trim())
        .map(([name]) => name);
      expect(missing).toEqual([]);
    });

    it('describes the request body of every operation that takes one', () => {
      const missing = operations(document)
        .filter(([name]) => /^(POST|PUT|PATCH) /.test(name) && !NO_BODY.has(name))
        .filter(([, op]) => !op.requestBody)
        .map(([name]) => name);
      expect(missing).toEqual([]);
    });

    it('declares the bodies published as */* with */* beside JSON, required as published', () => {
      const declared = Object.fromEntries(
        operations(document)
          .filter(([name]) => name in PUBLISHED_ANY_TYPE_BODIES)
          .map(([name, op]) => {
            const body = op.requestBody as { content?: Record<string, unknown>; required?: boolean } | undefined;
            return [name, { types: Object.keys(body?.content ?? {}).sort(), required: body?.required === true }];
          }),
      );
      expect(declared).toEqual(
        Object.fromEntries(
          Object.entries(PUBLISHED_ANY_TYPE_BODIES).map(([name, { required }]) => [
            name,
            { types: ['*/*', 'application/json'], required },
          ]),
        ),
      );
    });

    // Success types come from the CLI plugin (return types), which `nest build` runs and Jest's
    // compilation does not: only the built document, committed as openapi.json, has them all, so
    // only it is held to this.
    if (source.startsWith('committed')) {
      it('documents the success answer of every operation', () => {
        const missing = operations(document)
          .filter(([, op]) => !Object.keys(op.responses ?? {}).some((status) => /^2\d\d$/.test(status)))
          .map(([name]) => name);
        expect(missing).toEqual([]);
      });
    }

    it('names the scope of every operation that needs a token (x-required-scope), and lists its 403', () => {
      const problems: string[] = [];
      for (const [name, op] of operations(document)) {
        const scope = op['x-required-scope'];
        const authenticated = !(op.security && op.security.length === 0);
        if (!authenticated) {
          if (scope !== undefined) problems.push(`${name}: public, yet x-required-scope ${JSON.stringify(scope)}`);
          continue;
        }
        // `query` is the CLI's scope for running SQL: no control-plane operation needs it.
        if (scope !== 'workspaces' && scope !== 'databases')
          problems.push(`${name}: x-required-scope ${JSON.stringify(scope)}`);
        if (!op.responses?.['403']) problems.push(`${name}: no 403`);
      }
      expect(problems).toEqual([]);
    });

    it('lists the error responses of every operation (a dependency outage’s 503 among them), each with the error body', () => {
      const problems: string[] = [];
      for (const [name, op] of operations(document)) {
        const errors = Object.entries(op.responses ?? {}).filter(([status]) => Number(status) >= 400);
        if (!errors.length && !NO_ERRORS.has(name)) problems.push(`${name}: no error response`);
        const authenticated = !(op.security && op.security.length === 0);
        if (authenticated && !errors.some(([status]) => status === '401')) problems.push(`${name}: no 401`);
        // Every operation that can fail reads the metadata database at least: 503 while it is out.
        if (!NO_ERRORS.has(name) && !op.responses?.['503']) problems.push(`${name}: no 503`);
        for (const [status, response] of errors) {
          const ref = response.content?.['application/json']?.schema?.$ref;
          if (!ref || !ERROR_SCHEMAS.includes(ref)) problems.push(`${name} ${status}: not the error body`);
          if (!response.description?.trim()) problems.push(`${name} ${status}: no description`);
        }
      }
      expect(problems).toEqual([]);
    });

    it('tells when to retry a 503 of the API (Retry-After)', () => {
      const missing = operations(document)
        .filter(([name, op]) => !name.startsWith('GET /health') && op.responses?.['503'])
        .filter(([, op]) => !(op.responses!['503'] as { headers?: Record<string, unknown> }).headers?.['Retry-After'])
        .map(([name]) => name);
      expect(missing).toEqual([]);
    });
  },
);

describe('the built API (dist, as deployed)', () => {
  it('serves at /docs-json exactly the committed openapi.json, version included', async () => {
    const { result: served } = await withBuiltApi(
      { LOG_LEVEL: 'silent' },
      async (base) => (await (await fetch(`${base}/docs-json`)).json()) as OpenAPIObject,
    );
    const committed = committedDocument();
    expect(served.info.version).toBe(committed.info.version);
    expect(served).toEqual(committed);
  });
});
