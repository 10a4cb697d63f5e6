import { withinMs } from '../common/within-ms';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { Job } from 'bull';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { DataPlane } from '../data-plane/data-plane.service';
import { metadataPool } from '../database/hot-query';
import { DatabaseIdsCache } from '../developers/database-ids-cache';
import { TelemetrySampler } from '../insights/telemetry-sampler.service';
import { JobDispatcher } from '../queues/job-dispatcher';
import { ALL_QUEUES } from '../queues/queue-names';
import { Reconciler } from '../queues/reconciler';
import { messageOf } from '../common/errors/message-of';

/** A scrape must answer even while a dependency hangs: each source gets this long. */
const SOURCE_TIMEOUT_MS = 1000;
const JOB_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;
/** Bull's error for a job it fails for stalling more than `maxStalledCount` times. */
const STALLED_TOO_OFTEN = 'job stalled more than allowable limit';

/**
 * The process's Prometheus registry: HTTP requests, Bull queues and jobs, the metadata and
 * data-plane pools, databases by status, expiring credentials, reconciler passes, the database ids
 * `/developers/me` remembers, telemetry passes and the process defaults. One registry per app (not prom-client's global one), so two apps in one process (the
 * tests) each report their own. Gauges read their source when scraped.
 */
@Injectable()
export class OperationsMetrics implements OnModuleInit {
  private readonly logger = new Logger(OperationsMetrics.name);
  readonly registry = new Registry();

  readonly httpRequests = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP requests by route template, method and status, and how long they took',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  private readonly jobDuration = new Histogram({
    name: 'bull_job_duration_seconds',
    help: 'Bull jobs processed by this process, by queue, job name and outcome, and how long they ran (stalled: one another process lost, failed by this one on finding it stalled, timed from its start until then)',
    labelNames: ['queue', 'job', 'outcome'] as const,
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });

  constructor(
    private readonly jobs: JobDispatcher,
    private readonly dataSource: DataSource,
    private readonly dataPlane: DataPlane,
    private readonly reconciler: Reconciler,
    private readonly databaseIds: DatabaseIdsCache,
    private readonly sampler: TelemetrySampler,
    private readonly config: AppConfig,
  ) {
    collectDefaultMetrics({ register: this.registry });
    // Gauges named like counters, which `promtool check metrics` flags; the per-type
    // nodejs_active_handles / _requests / _resources gauges beside them carry the same counts.
    for (const name of [
      'nodejs_active_handles_total',
      'nodejs_active_requests_total',
      'nodejs_active_resources_total',
    ]) {
      this.registry.removeSingleMetric(name);
    }
    this.defineGauges();
    this.defineInviteSeries();
    this.defineReconcilerSeries();
    this.defineProfileSeries();
    this.defineTelemetrySeries();
  }

  onModuleInit(): void {
    // Local events: they fire in the process that ran the job (a worker, or the API with WORKERS=on).
    for (const name of ALL_QUEUES) {
      const queue = this.jobs.queue(name);
      const observe = (job: Job, outcome: 'completed' | 'failed' | 'stalled') => {
        const seconds = ((job.finishedOn ?? Date.now()) - (job.processedOn ?? Date.now())) / 1000;
        this.jobDuration.observe({ queue: name, job: job.name, outcome }, Math.max(0, seconds));
      };
      queue.on('completed', (job: Job) => observe(job, 'completed'));
      // Bull fails a job stalled too often in whichever process finds it (its own error, this message).
      queue.on('failed', (job: Job, err: Error) =>
        observe(job, err?.message === STALLED_TOO_OFTEN ? 'stalled' : 'failed'),
      );
    }
  }

  /** The exposition (Prometheus text format) and its content type. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private defineGauges(): void {
    const { jobs, dataSource, dataPlane } = this;
    const bounded = this.bounded.bind(this);
    new Gauge({
      name: 'bull_queue_jobs',
      help: 'Jobs in each Bull queue by state (omitted for a queue whose Redis does not answer)',
      labelNames: ['queue', 'state'] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        await Promise.all(
          ALL_QUEUES.map(async (name) => {
            const counts = await bounded(`queue ${name}`, jobs.queue(name).getJobCounts());
            if (!counts) return;
            for (const state of JOB_STATES) this.set({ queue: name, state }, counts[state] ?? 0);
          }),
        );
      },
    });
    new Gauge({
      name: 'metadata_pool_connections',
      help: 'Connections of the metadata PostgreSQL pool: total, idle, and requests waiting for one',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        // Absent before the data source connects and after it is destroyed.
        const pool = metadataPool(dataSource) as Pool | undefined;
        if (!pool) return;
        this.set({ state: 'total' }, pool.totalCount);
        this.set({ state: 'idle' }, pool.idleCount);
        this.set({ state: 'waiting' }, pool.waitingCount);
      },
    });
    new Gauge({
      name: 'data_plane_pool_connections',
      help: 'Connections of the data-plane admin pools by server (its id in data_plane_servers): total, idle, and requests waiting',
      labelNames: ['server', 'state'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        const byServer = new Map<string, { total: number; idle: number; waiting: number }>();
        for (const pool of dataPlane.adminPoolStats()) {
          const sum = byServer.get(pool.server) ?? { total: 0, idle: 0, waiting: 0 };
          sum.total += pool.total;
          sum.idle += pool.idle;
          sum.waiting += pool.waiting;
          byServer.set(pool.server, sum);
        }
        for (const [server, sum] of byServer) {
          for (const state of ['total', 'idle', 'waiting'] as const) this.set({ server, state }, sum[state]);
        }
      },
    });
    new Gauge({
      name: 'control_plane_databases',
      help: 'Customer databases by status; DELETION_PENDING: deleted, not yet finalized',
      labelNames: ['status'] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        const rows = await bounded(
          'databases by status',
          dataSource.query<{ status: string; count: string }[]>(
            `SELECT CASE WHEN deleted IS NULL THEN status::text ELSE 'DELETION_PENDING' END AS status, count(*) AS count
               FROM databases WHERE finalized IS NULL GROUP BY 1`,
          ),
        );
        for (const row of rows ?? []) this.set({ status: row.status }, Number(row.count));
      },
    });
    new Gauge({
      name: 'control_plane_credentials_expiring',
      help: 'Credentials whose expiry is set and whose role is not dropped yet; overdue: the expiry has passed',
      labelNames: ['due'] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        const rows = await bounded(
          'expiring credentials',
          dataSource.query<{ upcoming: string; overdue: string }[]>(
            `SELECT count(*) FILTER (WHERE expires_at > now()) AS upcoming,
                    count(*) FILTER (WHERE expires_at <= now()) AS overdue
               FROM credentials WHERE expires_at IS NOT NULL AND dropped IS NULL`,
          ),
        );
        if (!rows?.[0]) return;
        this.set({ due: 'upcoming' }, Number(rows[0].upcoming));
        this.set({ due: 'overdue' }, Number(rows[0].overdue));
      },
    });
  }

  /**
   * The invite e-mails of the whole service over the last hour beside INVITES_PER_HOUR: when the first
   * nears the second, someone may be using up everyone's invites (alert on their ratio).
   */
  private defineInviteSeries(): void {
    const { dataSource } = this;
    const bounded = this.bounded.bind(this);
    new Gauge({
      name: 'control_plane_invite_emails_last_hour',
      help: 'Invite e-mails the whole service was asked to send over the last hour (deleted invites included), as INVITES_PER_HOUR counts them',
      registers: [this.registry],
      async collect() {
        // Absent, not 0, when unknown: reset() leaves a gauge without labels at 0 (prom-client).
        this.remove();
        const rows = await bounded(
          'invite e-mails of the last hour',
          dataSource.query<{ count: string }[]>(
            "SELECT count(*) AS count FROM invite_sends WHERE created > now() - interval '1 hour'",
          ),
        );
        if (rows?.[0]) this.set(Number(rows[0].count));
      },
    });
    const limit = this.config.env.INVITES_PER_HOUR;
    new Gauge({
      name: 'control_plane_invite_emails_per_hour_limit',
      help: 'INVITES_PER_HOUR: invite e-mails the whole service may send over the last hour',
      registers: [this.registry],
      collect() {
        this.set(limit);
      },
    });
  }

  private defineReconcilerSeries(): void {
    const reconciler = this.reconciler;
    new Counter({
      name: 'reconciler_passes_total',
      help: 'Reconcile passes this process finished',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(reconciler.stats.passes);
      },
    });
    new Counter({
      name: 'reconciler_task_runs_total',
      help: 'Reconcile task runs by task and outcome (ok, failed)',
      labelNames: ['task', 'outcome'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [task, runs] of reconciler.stats.taskRuns) {
          this.inc({ task, outcome: 'ok' }, runs.ok);
          this.inc({ task, outcome: 'failed' }, runs.failed);
        }
      },
    });
    new Counter({
      name: 'reconciler_jobs_enqueued_total',
      help: 'Jobs the reconcile tasks re-enqueued, by task and queue (an id already queued collapses into it)',
      labelNames: ['task', 'queue'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [task, queues] of reconciler.stats.enqueued) {
          for (const [queue, count] of queues) this.inc({ task, queue }, count);
        }
      },
    });
    new Gauge({
      name: 'reconciler_last_pass_timestamp_seconds',
      help: 'When the last reconcile pass of this process ended (Unix time; absent before the first)',
      registers: [this.registry],
      collect() {
        this.remove();
        const ended = reconciler.stats.lastPassEndedAt;
        if (ended) this.set(ended.getTime() / 1000);
      },
    });
  }

  private defineProfileSeries(): void {
    const cache = this.databaseIds;
    new Counter({
      name: 'developer_profile_database_ids_total',
      help: "Workspaces' non-empty lists of database ids /developers/me served, by source (aggregated by PostgreSQL, or remembered at the workspace's version)",
      labelNames: ['source'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc({ source: 'aggregated' }, cache.served.aggregated);
        this.inc({ source: 'remembered' }, cache.served.remembered);
      },
    });
    new Gauge({
      name: 'developer_profile_remembered_workspaces',
      help: 'Workspaces whose database ids this process remembers for /developers/me',
      registers: [this.registry],
      collect() {
        this.set(cache.held.workspaces);
      },
    });
    new Gauge({
      name: 'developer_profile_remembered_bytes',
      help: 'Bytes of database ids this process remembers for /developers/me (16 an id)',
      registers: [this.registry],
      collect() {
        this.set(cache.held.bytes);
      },
    });
  }

  private defineTelemetrySeries(): void {
    const sampler = this.sampler;
    new Counter({
      name: 'telemetry_passes_total',
      help: 'Telemetry passes this process ran, by outcome: sampled (every database probed), server_not_answering (some recorded down without a probe), skipped_stale (not run: its interval was over)',
      labelNames: ['outcome'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        const counts = sampler.passCounts;
        this.inc({ outcome: 'sampled' }, counts.sampled);
        this.inc({ outcome: 'server_not_answering' }, counts.serverNotAnswering);
        this.inc({ outcome: 'skipped_stale' }, counts.skippedStale);
      },
    });
  }

  /** The source's answer, or undefined (logged) when it fails or takes longer than a scrape can wait. */
  private async bounded<T>(what: string, source: Promise<T>): Promise<T | undefined> {
    try {
      return await withinMs(source, SOURCE_TIMEOUT_MS, () => new Error(`no answer within ${SOURCE_TIMEOUT_MS} ms`));
    } catch (err) {
      this.logger.warn({ source: what, err: messageOf(err) }, 'metric source failed');
      return undefined;
    }
  }
}
