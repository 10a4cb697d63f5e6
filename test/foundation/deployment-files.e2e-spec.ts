import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse } from 'yaml';
import { EnvironmentVariables } from '../../src/config/environment';
import { SHUTDOWN_FORCE_EXIT_MS } from '../../src/shutdown';

/**
 * There is no Docker engine where the tests run, so docker-compose.yml and the Dockerfile are read
 * line by line here for what makes a first `docker compose up` start (or not).
 */
const root = join(__dirname, '..', '..');
const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8')) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
/** Dockerfile instructions, one per entry (continuation lines joined, comments dropped). */
const instructions = dockerfile
  .replace(/\\\n/g, ' ')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line && !line.startsWith('#'));

interface Service {
  image?: string;
  build?: unknown;
  pull_policy?: string;
  restart?: string;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  stop_grace_period?: string;
  ports?: string[];
}

/** A Compose duration (`1m30s`, `40s`, `500ms`) in milliseconds; NaN when it is not one. */
function durationMs(value: string | undefined): number {
  const units: Record<string, number> = { h: 3600000, m: 60000, s: 1000, ms: 1, us: 0.001 };
  const parts = [...(value ?? '').matchAll(/(\d+(?:\.\d+)?)(ms|us|h|m|s)/g)];
  if (!parts.length || parts.map((p) => p[0]).join('') !== value) return NaN;
  return parts.reduce((sum, [, n, unit]) => sum + Number(n) * units[unit], 0);
}

/** An exact tag: a version with at least major.minor (no `latest`, no bare major), or a digest. */
const PINNED = /^[a-z0-9./-]+(:v?\d+\.\d+(\.\d+)?(-[a-z0-9.-]+)?|@sha256:[0-9a-f]{64})$/;

describe('Dockerfile and docker-compose.yml', () => {
  const { api, worker, postgres } = compose.services;

  it("gives the api and the worker longer to stop than the process's own bound on a graceful shutdown", () => {
    // Docker's default (10 s) would kill a request or job in flight before the process is done.
    for (const [name, service] of [
      ['api', api],
      ['worker', worker],
    ] as const) {
      const graceMs = durationMs(service.stop_grace_period);
      expect({ name, graceMs, longer: graceMs > SHUTDOWN_FORCE_EXIT_MS }).toEqual({ name, graceMs, longer: true });
    }
  });

  it('pins every image to an exact tag', () => {
    const images = Object.entries(compose.services).map(([name, s]) => [name, s.image]);
    for (const [name, image] of images)
      expect({ name, image, pinned: PINNED.test(image ?? '') }).toEqual({ name, image, pinned: true });
    const bases = instructions.filter((i) => i.startsWith('FROM ')).map((i) => i.split(/\s+/)[1]);
    expect(bases.length).toBeGreaterThanOrEqual(2);
    for (const base of bases) expect(base).toMatch(PINNED);
    // The runtime the project supports (.nvmrc), in every stage.
    const node = readFileSync(join(root, '.nvmrc'), 'utf8').trim().replace(/^v/, '');
    for (const base of bases) expect(base).toBe(`node:${node}-bookworm-slim`);
  });

  it('runs the image, the api and the worker with the V8 flags `npm start` and `npm run start:worker` use', () => {
    const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const flagsOf = (script: string) => script.replace(/^node\s+/, '').replace(/\s*dist\/src\/\w+\.js$/, '');
    const flags = flagsOf(scripts.start);
    expect(flags).toBe('--max-semi-space-size=16 --no-allocation-site-pretenuring');
    expect(flagsOf(scripts['start:worker'])).toBe(flags);
    // Node refuses --no-allocation-site-pretenuring in NODE_OPTIONS: the flags are on the command lines.
    const cmd = instructions.filter((i) => i.startsWith('CMD ')).map((i) => JSON.parse(i.slice(4)) as string[]);
    expect(cmd).toEqual([['node', ...flags.split(' '), 'dist/src/main.js']]);
    expect(worker.command).toEqual(['node', ...flags.split(' '), 'dist/src/worker.js']);
    expect(instructions.some((i) => i.startsWith('ENV NODE_OPTIONS'))).toBe(false);
  });

  it('builds one named image, used by both the api and the worker', () => {
    const building = Object.entries(compose.services).filter(([, s]) => s.build !== undefined);
    expect(building.map(([name]) => name)).toEqual(['api']);
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    expect(api.image).toBe(`db-control-plane:${version}`);
    expect(worker.image).toBe(api.image);
    // Never looked up in a registry: it exists once the api's build has run.
    expect(worker.pull_policy).toBe('never');
  });

  it('checks PostgreSQL readiness over TCP (the init server on a fresh volume listens on the socket only)', () => {
    const test = postgres.healthcheck!.test;
    expect(test.slice(0, 2)).toEqual(['CMD', 'pg_isready']);
    expect(test[test.indexOf('-h') + 1]).toMatch(/^(127\.0\.0\.1|localhost)$/);
    expect(api.depends_on).toMatchObject({
      postgres: { condition: 'service_healthy' },
      redis: { condition: 'service_healthy' },
    });
  });

  it('preloads pg_stat_statements on the data plane and creates it in the admin database on a fresh volume (query-performance insights)', () => {
    expect(postgres.command).toEqual(expect.arrayContaining(['-c', 'shared_preload_libraries=pg_stat_statements']));
    const init = postgres
      .volumes!.map((v) => v.split(':'))
      .find(([, target]) => target === '/docker-entrypoint-initdb.d');
    expect(init).toBeDefined();
    const dir = join(root, init![0]);
    const scripts = readdirSync(dir).filter((name) => name.endsWith('.sql'));
    expect(scripts.map((name) => readFileSync(join(dir, name), 'utf8')).join('\n')).toMatch(
      /^CREATE EXTENSION IF NOT EXISTS pg_stat_statements;$/m,
    );
    // The admin database is the one the image's init scripts run in.
    expect(new URL(api.environment!.DATA_PLANE_URL.replace(/\$\{[^}]*\}/g, 'x')).pathname).toBe('/postgres');
  });

  it('restarts the api and the worker when they fail', () => {
    expect(api.restart).toBe('on-failure');
    expect(worker.restart).toBe('on-failure');
  });

  it('creates the secrets directory in the image, owned by the user the image runs as', () => {
    const secretsDir = dirname(api.environment!.SECRETS_FILE);
    expect(worker.environment!.SECRETS_FILE).toBe(api.environment!.SECRETS_FILE);
    // The named volume is mounted exactly there in both (so it starts as a copy of the image's directory).
    for (const service of [api, worker]) {
      const mount = service.volumes!.map((v) => v.split(':')).find(([, target]) => target === secretsDir);
      expect(mount && compose.volumes[mount[0]] !== undefined).toBe(true);
    }
    const user = instructions.findIndex((i) => i.startsWith('USER '));
    expect(instructions[user]).toBe('USER node');
    const prepared = instructions
      .slice(0, user)
      .filter((i) => i.startsWith('RUN ') && i.includes(`mkdir -p ${secretsDir}`));
    expect(prepared).toHaveLength(1);
    expect(prepared[0]).toMatch(new RegExp(`chown (-R )?node(:node)? ${secretsDir.replace(/\//g, '\\/')}`));
    // ...and in the final stage, the one that runs.
    const lastFrom = instructions.map((i) => i.startsWith('FROM ')).lastIndexOf(true);
    expect(instructions.indexOf(prepared[0])).toBeGreaterThan(lastFrom);
  });

  it('starts the worker after the api is ready, and probes both on their readiness endpoints', () => {
    expect(worker.depends_on).toEqual({ api: { condition: 'service_healthy' } });
    expect(api.healthcheck!.test.join(' ')).toContain('http://127.0.0.1:3000/health/ready');
    const workerPort = api.environment!.WORKER_PORT ?? '3001';
    expect(worker.healthcheck!.test.join(' ')).toContain(`http://127.0.0.1:${workerPort}/health/ready`);
  });

  it('publishes ports on the loopback interface only, and takes the PostgreSQL password from the environment', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const port of service.ports ?? []) expect(`${name} ${port}`).toMatch(/^\S+ 127\.0\.0\.1:\d+:\d+$/);
    }
    expect(postgres.environment!.POSTGRES_PASSWORD).toBe('${POSTGRES_PASSWORD:-postgres}');
    for (const url of [api.environment!.DATABASE_URL, api.environment!.DATA_PLANE_URL]) {
      expect(url).toMatch(/^postgres:\/\/postgres:\$\{POSTGRES_PASSWORD:-postgres\}@postgres:5432\//);
    }
  });

  it('sets only variables the service reads', () => {
    const known = Object.keys(new EnvironmentVariables());
    for (const service of [api, worker]) {
      const unknown = Object.keys(service.environment ?? {}).filter((name) => !known.includes(name));
      expect(unknown).toEqual([]);
    }
  });
});
