import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import { parseArgs } from 'node:util';
import {
  isPublicHost,
  MAX_SERVER_DATABASES,
  PUBLIC_HOST_FORMAT,
  serverCapacityOf,
} from './config/data-plane-server-values';
import { parseDecimalInteger } from './config/decimal-integer';
import { CREATABLE_REGIONS, type Region } from './config/regions';
import { messageOf } from './common/errors/message-of';

/**
 * Operator commands: `npm run --silent cli -- <command> [options]`. Each prints one JSON object as
 * the last line of standard output; on error it prints a message on standard error and exits 1.
 */

type Options = Record<string, string | boolean | string[] | undefined>;
type Task = (app: INestApplicationContext) => Promise<object>;

interface Command {
  usage: string;
  options: NonNullable<Parameters<typeof parseArgs>[0]>['options'];
  /** Checks the options (before anything boots) and returns the work to do. */
  prepare(options: Options): Task;
}

class UsageError extends Error {}

/** The fleet's services, loaded when a server command runs (like every service here: usage errors stay quick). */
async function fleet() {
  const [
    { DataPlaneServers },
    { DataPlane },
    { DatabasesService },
    { DatabaseLifecycle },
    { Placement },
    { DataPlaneServerState },
  ] = await Promise.all([
    import('./data-plane/data-plane-servers.service.js'),
    import('./data-plane/data-plane.service.js'),
    import('./databases/databases.service.js'),
    import('./databases/database-lifecycle.service.js'),
    import('./databases/placement.service.js'),
    import('./data-plane/data-plane-server.entity.js'),
  ]);
  return { DataPlaneServers, DataPlane, DatabasesService, DatabaseLifecycle, Placement, DataPlaneServerState };
}

const MAX_TTL_SECONDS = 366 * 86400;

const COMMANDS: Record<string, Command> = {
  'developer:create': {
    usage: 'developer:create --email E --password P|- | developer:create --email E --kind API',
    options: { email: { type: 'string' }, password: { type: 'string' }, kind: { type: 'string' } },
    prepare(options) {
      const email = required(options, 'email');
      const kind = ((options.kind as string | undefined) ?? 'HUMAN').toUpperCase();
      if (kind === 'API') {
        if (options.password !== undefined) throw new UsageError('an API developer has no password');
        return async (app) => {
          const { OAuthClientsService } = await import('./auth/oauth/oauth-clients.service.js');
          return app.get(OAuthClientsService).createApiDeveloper(email);
        };
      }
      if (kind !== 'HUMAN') throw new UsageError('--kind must be HUMAN or API');
      const password = required(options, 'password');
      return async (app) => {
        const [{ DevelopersService }, { DeveloperKind }] = await Promise.all([
          import('./developers/developers.service.js'),
          import('./developers/developer.entity.js'),
        ]);
        return app.get(DevelopersService).create({ email, kind: DeveloperKind.Human, password });
      };
    },
  },
  'token:issue': {
    usage: 'token:issue --email E [--ttl SECONDS]',
    options: { email: { type: 'string' }, ttl: { type: 'string' } },
    prepare(options) {
      const email = required(options, 'email');
      let ttl: number | undefined;
      if (options.ttl !== undefined) {
        ttl = typeof options.ttl === 'string' ? parseDecimalInteger(options.ttl) : undefined;
        if (ttl === undefined || ttl < 1 || ttl > MAX_TTL_SECONDS) {
          throw new UsageError(`--ttl must be a whole number of seconds from 1 to ${MAX_TTL_SECONDS}`);
        }
      }
      return async (app) => {
        const [{ DevelopersService }, { AccessTokens }, { SUPPORTED_SCOPES }] = await Promise.all([
          import('./developers/developers.service.js'),
          import('./auth/access-tokens.js'),
          import('./auth/oauth/scopes.js'),
        ]);
        const developer = await app.get(DevelopersService).findActiveByEmail(email);
        if (!developer) throw new Error(`No developer with e-mail ${email}`);
        return app.get(AccessTokens).issue({ sub: developer.id, scope: SUPPORTED_SCOPES.join(' ') }, ttl);
      };
    },
  },
  'client:create': {
    usage: 'client:create --client-id ID --redirect-uri URI [--redirect-uri URI...] [--public] [--name NAME]',
    options: {
      'client-id': { type: 'string' },
      'redirect-uri': { type: 'string', multiple: true },
      public: { type: 'boolean' },
      name: { type: 'string' },
    },
    prepare(options) {
      const clientId = required(options, 'client-id');
      const redirectUris = (options['redirect-uri'] as string[] | undefined) ?? [];
      if (!redirectUris.length) throw new UsageError('--redirect-uri is required');
      const name = options.name as string | undefined;
      const isPublic = options.public === true;
      return async (app) => {
        const { OAuthClientsService } = await import('./auth/oauth/oauth-clients.service.js');
        return app.get(OAuthClientsService).create({ clientId, name, redirectUris, isPublic });
      };
    },
  },
  'server:add': {
    usage: 'server:add --region R --url URL|- [--public-host HOST:PORT] [--max-databases N]',
    options: {
      region: { type: 'string' },
      url: { type: 'string' },
      'public-host': { type: 'string' },
      'max-databases': { type: 'string' },
    },
    prepare(options) {
      const region = required(options, 'region') as Region;
      // A server of another region would never be given a database.
      if (!CREATABLE_REGIONS.includes(region))
        throw new UsageError(
          `--region must be one of ${CREATABLE_REGIONS.join(', ')} (the regions databases are created in)`,
        );
      const url = postgresUrl(required(options, 'url'));
      const publicHost = optionalPublicHost(options) ?? publicHostOf(url);
      const maxDatabases = optionalMaxDatabases(options);
      return async (app) => {
        const { DataPlane, DataPlaneServers } = await fleet();
        const dataPlane = app.get(DataPlane);
        const servers = app.get(DataPlaneServers);
        // Connects and checks the admin's rights before anything is saved; the URL is never printed.
        let systemIdentifier: string;
        try {
          ({ systemIdentifier } = await dataPlane.checkAdmin(url));
        } catch (err) {
          throw new Error(`the server cannot serve as a data-plane server: ${(err as Error).message}`, { cause: err });
        }
        // A cluster is one server of a region: the servers registered before identifiers were are asked theirs.
        await servers.identifyRegistered((id) => dataPlane.systemIdentifier(id));
        return servers.add({ region, url, publicHost, maxDatabases, systemIdentifier });
      };
    },
  },
  'server:list': {
    usage: 'server:list',
    options: {},
    prepare() {
      return async (app) => {
        const { DataPlaneServers, DatabasesService } = await fleet();
        const servers = await app.get(DataPlaneServers).directory(true);
        const counts = await app.get(DatabasesService).countByServer(servers.map((s) => s.id));
        return servers.map((s) => ({ ...s, databases: counts.get(s.id) ?? 0 }));
      };
    },
  },
  'server:update': {
    usage: 'server:update --id ID [--max-databases N] [--public-host HOST:PORT] [--url URL|-]',
    options: {
      id: { type: 'string' },
      'max-databases': { type: 'string' },
      'public-host': { type: 'string' },
      url: { type: 'string' },
    },
    prepare(options) {
      const id = requiredUuid(options, 'id');
      const change = {
        maxDatabases: optionalMaxDatabases(options),
        publicHost: optionalPublicHost(options),
        url: options.url === undefined ? undefined : postgresUrl(String(options.url)),
      };
      if (change.maxDatabases === undefined && change.publicHost === undefined && change.url === undefined) {
        throw new UsageError('nothing to change: give --max-databases, --public-host, --url or several');
      }
      return async (app) => {
        const { DataPlane, DataPlaneServers, DatabasesService } = await fleet();
        if (change.url !== undefined) {
          // The new URL must reach this server: the admin's rights, and some of its databases there.
          const holding = await app.get(DatabasesService).builtOn(id, 20);
          try {
            const { systemIdentifier } = await app.get(DataPlane).checkAdmin(change.url, holding);
            return await app.get(DataPlaneServers).update(id, { ...change, systemIdentifier });
          } catch (err) {
            throw new Error(`the new URL cannot serve this server: ${(err as Error).message}`, { cause: err });
          }
        }
        return app.get(DataPlaneServers).update(id, change);
      };
    },
  },
  'secrets:reseal': {
    usage: 'secrets:reseal',
    options: {},
    prepare() {
      return async (app) => {
        const { SecretsReseal } = await import('./common/crypto/secrets-reseal.service.js');
        const outcome = await app.get(SecretsReseal).run();
        const left = Object.entries(outcome.remaining).filter(([, n]) => n > 0);
        if (left.length) {
          throw new Error(
            `still sealed with other keys: ${left.map(([table, n]) => `${n} in ${table} (${outcome.unreadable[table]} with a key no longer configured)`).join(', ')}; keep the old keys and run it again (resealed: ${JSON.stringify(outcome.resealed)})`,
          );
        }
        return { keyId: outcome.keyId, resealed: outcome.resealed, remaining: outcome.remaining };
      };
    },
  },
  reconcile: {
    usage: 'reconcile',
    options: {},
    prepare() {
      return async (app) => {
        const [{ Reconciler }, { TelemetrySampler }, { TELEMETRY_SCHEDULE_TASK }] = await Promise.all([
          import('./queues/reconciler.js'),
          import('./insights/telemetry-sampler.service.js'),
          import('./insights/telemetry-schedule.js'),
        ]);
        const reconciler = app.get(Reconciler);
        // The telemetry schedule's task is registered where the processors run (TelemetrySchedule,
        // not part of this process): a pass from here puts the schedule back too, when it was lost
        // (one there is the processors' own, at their interval).
        const sampler = app.get(TelemetrySampler);
        reconciler.register(TELEMETRY_SCHEDULE_TASK, () => sampler.ensureSchedule({ onlyIfLost: true }));
        // One pass of every task, in this process (jobs it enqueues go to the workers).
        await reconciler.runOnce();
        const tasks = Object.fromEntries(
          [...reconciler.stats.taskRuns].map(([name, runs]) => [name, runs.failed ? 'failed' : 'ok']),
        );
        const failed = [...reconciler.stats.taskRuns]
          .filter(([, runs]) => runs.failed)
          .map(([name, runs]) => `${name} (${runs.lastError ?? 'no reason given'})`);
        // This process logs nothing (the command's output is its answer): the reasons go in the message.
        if (failed.length) throw new Error(`reconcile tasks failed: ${failed.join('; ')}`);
        const enqueued: Record<string, number> = {};
        for (const perQueue of reconciler.stats.enqueued.values()) {
          for (const [queue, count] of perQueue) enqueued[queue] = (enqueued[queue] ?? 0) + count;
        }
        return { tasks, enqueued };
      };
    },
  },
  'server:disable': serverStateCommand('server:disable', 'Disabled'),
  'server:drain': serverStateCommand('server:drain', 'Draining'),
  'server:activate': serverStateCommand('server:activate', 'Active'),
  'server:remove': {
    usage: 'server:remove --id ID [--lost]',
    options: { id: { type: 'string' }, lost: { type: 'boolean' } },
    prepare(options) {
      const id = requiredUuid(options, 'id');
      return async (app) => {
        const { DataPlaneServers, DataPlane, DatabaseLifecycle, Placement } = await fleet();
        const servers = app.get(DataPlaneServers);
        if (!options.lost) return servers.remove(id, () => app.get(Placement).livingOn(id));
        return servers.removeLost(
          id,
          () => app.get(DataPlane).reachable(id),
          () => app.get(DatabaseLifecycle).writeOffServer(id),
        );
      };
    },
  },
};

/** `--url`'s value, a postgres:// URL. */
function postgresUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError('--url must be a postgres:// URL');
  }
  if (!['postgres:', 'postgresql:'].includes(parsed.protocol)) throw new UsageError('--url must be a postgres:// URL');
  return url;
}

/** A command that sets a server's state (drain, activate, disable). */
function serverStateCommand(name: string, state: 'Active' | 'Draining' | 'Disabled'): Command {
  return {
    usage: `${name} --id ID`,
    options: { id: { type: 'string' } },
    prepare(options) {
      const id = requiredUuid(options, 'id');
      return async (app) => {
        const { DataPlaneServers, DataPlaneServerState } = await fleet();
        return app.get(DataPlaneServers).setState(id, DataPlaneServerState[state]);
      };
    },
  };
}

/**
 * `--<name> -`'s value: standard input up to its end, less one trailing newline (what `echo` or a
 * here-string adds).
 */
async function secretFromStdin(name: 'password' | 'url'): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write(`${name === 'url' ? 'URL' : 'Password'} (then Enter and Ctrl-D): `);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const value = Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
  if (!value) throw new UsageError(`--${name} -: nothing on standard input`);
  return value;
}

function required(options: Options, name: string): string {
  const value = options[name];
  if (typeof value !== 'string' || !value) throw new UsageError(`--${name} is required`);
  return value;
}

/** The same range as DATA_PLANE_MAX_DATABASES (the column is int4). */
function optionalMaxDatabases(options: Options): number | undefined {
  const given = options['max-databases'];
  if (given === undefined) return undefined;
  const maxDatabases = typeof given === 'string' ? serverCapacityOf(given) : undefined;
  if (maxDatabases === undefined) {
    throw new UsageError(`--max-databases must be a whole number from 1 to ${MAX_SERVER_DATABASES}`);
  }
  return maxDatabases;
}

/**
 * `host` or `host:port` (PostgreSQL's port when it names none), as customers will connect to it:
 * the rule DATA_PLANE_PUBLIC_HOST[_<REGION>] is held to.
 */
function optionalPublicHost(options: Options): string | undefined {
  const host = options['public-host'];
  if (host === undefined) return undefined;
  if (typeof host !== 'string' || !isPublicHost(host)) {
    throw new UsageError(`--public-host must be ${PUBLIC_HOST_FORMAT}`);
  }
  return host;
}

/**
 * Without --public-host, customers are given the admin URL's host. A URL that names its host in the
 * query (libpq's `?host=`) or a socket directory names none they could use.
 */
function publicHostOf(url: string): string {
  const { host } = new URL(url);
  if (!isPublicHost(host)) {
    throw new UsageError(
      `--public-host is required: the URL names no host customers can connect to (${PUBLIC_HOST_FORMAT})`,
    );
  }
  return host;
}

function requiredUuid(options: Options, name: string): string {
  const value = required(options, name);
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value)) {
    throw new UsageError(`--${name} must be a server id (a UUID, see server:list)`);
  }
  return value.toLowerCase();
}

function usage(): string {
  return [
    'Usage: npm run --silent cli -- <command> [options]',
    ...Object.values(COMMANDS).map((c) => `  ${c.usage}`),
  ].join('\n');
}

function fail(message: string, usageLine?: string): number {
  process.stderr.write(`error: ${message}\n${usageLine ? `Usage: ${usageLine}\n` : ''}`);
  return 1;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  const command = name && Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${usage()}\n`);
    return 0;
  }
  if (!command) {
    process.stderr.write(`${name ? `error: Unknown command ${name}\n` : ''}${usage()}\n`);
    return 1;
  }
  let task: Task;
  try {
    const { values } = parseArgs({ args: rest, options: command.options, strict: true, allowPositionals: false });
    const options: Options = values;
    // `--password -`, `--url -`: the secret comes from standard input, so it stays out of argv (ps,
    // /proc/<pid>/cmdline) and shell history.
    if (options.password === '-') options.password = await secretFromStdin('password');
    if (options.url === '-') options.url = await secretFromStdin('url');
    task = command.prepare(options);
  } catch (err) {
    return fail((err as Error).message, command.usage);
  }

  // Operator commands never run queue processors: AppModule alone has none (see QueueProcessorsModule).
  // Loaded only now, so usage errors answer without loading the whole application.
  const [{ bootstrapChecks }, { NestFactory }] = await Promise.all([import('./bootstrap.js'), import('@nestjs/core')]);
  await bootstrapChecks();
  const { AppModule } = await import('./app.module.js');
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false, abortOnError: false });
  try {
    await app.init();
    const result = await task(app);
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } catch (err) {
    return fail(messageOf(err));
  } finally {
    await app.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`error: ${messageOf(err)}\n`);
    process.exit(1);
  },
);
