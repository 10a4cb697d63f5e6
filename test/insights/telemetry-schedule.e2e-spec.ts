import type { INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { randomBytes } from 'node:crypto';
import { AppConfig } from '../../src/config/app-config';
import { TelemetrySchedule } from '../../src/insights/telemetry-schedule';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { Queues } from '../../src/queues/queue-names';
import { Reconciler } from '../../src/queues/reconciler';
import { WorkerModule } from '../../src/worker.module';
import {
  createIsolatedMetadataDatabase,
  createTestApp,
  dropMetadataDatabase,
  reconcile,
  TestApp,
} from '../support/test-app';

/** The telemetry queue's repeatable jobs, by name. */
async function repeatableJobs(app: INestApplicationContext): Promise<string[]> {
  const jobs = await app.get(JobDispatcher).queue(Queues.Telemetry).getRepeatableJobs();
  return jobs.map((j) => j.name);
}

/**
 * Who keeps the telemetry schedule (`schedule-passes`): the process that runs the queue processors,
 * decided by the module it boots, not by WORKERS. docker-compose.yml's worker shares the API's
 * environment (`WORKERS: 'off'`): it must keep the schedule anyway, or no pass ever runs (no insights,
 * storage never metered). The API on WORKERS=off must not.
 */
describe('the telemetry schedule is kept where the queue processors run', () => {
  let worker: INestApplicationContext | undefined;
  let api: TestApp | undefined;
  let metadataUrl: string | undefined;
  afterEach(async () => {
    await worker?.close();
    await api?.close();
    if (metadataUrl) await dropMetadataDatabase(metadataUrl);
    worker = undefined;
    api = undefined;
    metadataUrl = undefined;
  });

  it('a worker booted with WORKERS=off (the Compose layout) schedules the passes, and its reconciler puts the schedule back when Redis lost it', async () => {
    // A metadata database of its own: its reconcile pass would otherwise take up (and build, and
    // still be building when the spec ends) every other spec's unfinished databases.
    metadataUrl = await createIsolatedMetadataDatabase();
    const overrides: Record<string, string> = {
      DATABASE_URL: metadataUrl,
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      QUEUE_PREFIX: `test-schedule-${randomBytes(4).toString('hex')}`,
      RECONCILE_INTERVAL_SECONDS: '3600',
      RECONCILE_FIRST_PASS_SECONDS: '3600',
      DATABASE_POOL_TARGET: '0',
      WORKER_PORT: '0',
      WORKERS: 'off',
    };
    const moduleRef = await Test.createTestingModule({ imports: [WorkerModule] })
      .overrideProvider(AppConfig)
      .useValue(AppConfig.fromEnvironment({ ...process.env, ...overrides }))
      .compile();
    worker = await moduleRef.init();
    // At boot.
    expect(await repeatableJobs(worker)).toEqual(['schedule-passes']);

    // A flushed Redis loses it; the reconciler's next pass adds it again.
    const queue = worker.get(JobDispatcher).queue(Queues.Telemetry);
    for (const job of await queue.getRepeatableJobs()) await queue.removeRepeatableByKey(job.key);
    expect(await repeatableJobs(worker)).toEqual([]);
    await worker.get(Reconciler).runOnce();
    expect(await repeatableJobs(worker)).toEqual(['schedule-passes']);
    expect(worker.get(Reconciler).stats.taskRuns.get('telemetry-schedule')).toEqual({ ok: 1, failed: 0 });
  });

  it('the API on WORKERS=off does not schedule them, at boot or in a reconcile pass', async () => {
    api = await createTestApp({ WORKERS: 'off', DATABASE_POOL_TARGET: '0' });
    expect(() => api!.app.get(TelemetrySchedule)).toThrow();
    await reconcile(api.app);
    expect(await repeatableJobs(api.app)).toEqual([]);
    expect(api.app.get(Reconciler).stats.taskRuns.has('telemetry-schedule')).toBe(false);
  });

  it('the API with its workers (WORKERS unset) schedules them', async () => {
    api = await createTestApp({ DATABASE_POOL_TARGET: '0' });
    expect(await repeatableJobs(api.app)).toEqual(['schedule-passes']);
  });
});
