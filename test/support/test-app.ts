import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { ApiModule } from '../../src/api.module';
import { configureApp } from '../../src/app.setup';
import { AccessTokens } from '../../src/auth/access-tokens';
import { AppConfig } from '../../src/config/app-config';
import { migrateDatabase } from '../../src/database/data-source-options';
import { DeveloperEntity, DeveloperKind } from '../../src/developers/developer.entity';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import type { QueueName } from '../../src/queues/queue-names';
import { Reconciler } from '../../src/queues/reconciler';

export interface TestApp {
  app: NestExpressApplication;
  http: TestAgent;
  dataSource: DataSource;
  close(): Promise<void>;
}

/**
 * Boots the API module (with the queue processors unless WORKERS=off), configured as main.ts does, against the run's real PostgreSQL, Redis
 * and data plane. Each app gets its own queue prefix so specs never take each other's jobs.
 */
export async function createTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const overrides: Record<string, string> = {
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    QUEUE_PREFIX: `test-${process.env.TEST_RUN_ID ?? 'x'}-${randomBytes(4).toString('hex')}`,
    // No pass runs on its own in a spec's app (a spec runs one with `reconcile` when it needs one).
    RECONCILE_INTERVAL_SECONDS: '3600',
    RECONCILE_FIRST_PASS_SECONDS: '3600',
    // Background jobs and requests share an app's pool; two spec files run at once in CI.
    DATABASE_POOL_SIZE: '8',
    JOB_BACKOFF_MS: '200',
    // Specs of databases, credentials and compute work in FREE workspaces; plan limits have their
    // own spec, which sets the documented defaults back.
    PLAN_FREE_MAX_DATABASES: 'unlimited',
    PLAN_FREE_MAX_CREDENTIALS_PER_DATABASE: 'unlimited',
    PLAN_FREE_DEDICATED_COMPUTE: 'true',
    // The specs of a run share one metadata database for the hour; the service's invite e-mails per
    // hour have their own spec, on a database of its own, with the limit set low.
    INVITES_PER_HOUR: '1000000',
    ...env,
  };
  // The app reads its configuration from the environment with the overrides on top; process.env
  // itself is left alone, so apps booting at once (or one after another) never see each other's.
  const config = AppConfig.fromEnvironment({ ...process.env, ...overrides });
  const moduleRef = await Test.createTestingModule({
    imports: [ApiModule.forRoot({ workers: config.workersEnabled })],
  })
    .overrideProvider(AppConfig)
    .useValue(config)
    .compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>({ bodyParser: false, bufferLogs: true });
  configureApp(app);
  await app.init();
  const dataSource = app.get(DataSource);
  return {
    app,
    http: request(app.getHttpServer()),
    dataSource,
    close: async () => {
      await app.close();
    },
  };
}

/**
 * An app on a metadata database of its own (created and migrated here, dropped on close). The
 * data-plane servers are rows of the metadata database, registered from DATA_PLANE_URL[_<REGION>]
 * by the first app that boots on it: a spec that needs its own servers (an unreachable region, a
 * second cluster) needs its own metadata database, or it would change every other spec's fleet.
 */
export async function createIsolatedTestApp(
  env: Record<string, string> = {},
): Promise<TestApp & { metadataUrl: string }> {
  const metadataUrl = await createIsolatedMetadataDatabase();
  const t = await createTestApp({ ...env, DATABASE_URL: metadataUrl });
  return {
    ...t,
    metadataUrl,
    close: async () => {
      await t.close();
      await dropMetadataDatabase(metadataUrl);
    },
  };
}

/**
 * A freshly migrated metadata database of the caller's own (its URL), for apps whose background work
 * must not meet other specs' apps: on the run's shared one, their reconcilers see every row. Drop it
 * with dropMetadataDatabase.
 */
export async function createIsolatedMetadataDatabase(): Promise<string> {
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `${url.pathname}_${randomBytes(4).toString('hex')}`;
  await migrateDatabase(url.toString());
  return url.toString();
}

export async function dropMetadataDatabase(metadataUrl: string): Promise<void> {
  const url = new URL(metadataUrl);
  const name = url.pathname.slice(1);
  url.pathname = '/postgres';
  const db = new Client({ connectionString: url.toString() });
  await db.connect();
  try {
    await db.query(`DROP DATABASE IF EXISTS ${db.escapeIdentifier(name)} WITH (FORCE)`);
  } finally {
    await db.end();
  }
}

export function uniqueEmail(label = 'dev'): string {
  return `${label}-${randomBytes(5).toString('hex')}@example.test`;
}

/** Inserts a developer directly (identity flows are tested on their own) and mints a token for it. */
export async function createDeveloperWithToken(
  app: INestApplication,
  options: { email?: string; kind?: DeveloperKind } = {},
): Promise<{ developer: DeveloperEntity; token: string; auth: { Authorization: string } }> {
  const repo = app.get(DataSource).getRepository(DeveloperEntity);
  const developer = await repo.save(
    repo.create({
      email: (options.email ?? uniqueEmail()).toLowerCase(),
      kind: options.kind ?? DeveloperKind.Human,
      passwordHash: null,
    }),
  );
  const token = app.get(AccessTokens).issue({ sub: developer.id, scope: '' }).access_token;
  return { developer, token, auth: { Authorization: `Bearer ${token}` } };
}

export function reconcile(app: INestApplication): Promise<void> {
  return app.get(Reconciler).runOnce();
}

/**
 * Resolves once the queue holds no job waiting, running or delayed: everything dispatched before
 * the call has run (for asserting that nothing more happens, without a guessed sleep).
 */
export function untilQueueIdle(app: INestApplication, queue: QueueName, timeoutMs = 10000): Promise<true> {
  const jobs = app.get(JobDispatcher).queue(queue);
  return eventually(async () => {
    const counts = await jobs.getJobCounts();
    return counts.waiting + counts.active + counts.delayed === 0;
  }, timeoutMs);
}

/** Polls until `check` returns a truthy value or the time is up (for background jobs). */
export async function eventually<T>(
  check: () => Promise<T | undefined | null | false>,
  timeoutMs = 20000,
  stepMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms${last instanceof Error ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
