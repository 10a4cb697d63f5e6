import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { DataPlane, isUnavailability } from '../data-plane/data-plane.service';
import { ServerAnswers } from '../data-plane/server-answers';
import {
  type DatabaseCounters,
  ERROR_COUNTERS,
  probeDatabase,
  type ProbeOutcome,
  ServerTelemetry,
  type StatementCounters,
} from '../data-plane/telemetry';
import { DatabasesService } from '../databases/databases.service';
import { MetadataTransactions } from '../database/metadata-transactions';
import { JobDispatcher } from '../queues/job-dispatcher';
import { JOBS } from '../queues/job-registry';
import { InsightsRepository, type NewSample } from './insights.repository';
import { sampleServerJobId } from './telemetry-jobs';
import { messageOf } from '../common/errors/message-of';

export interface SampledDatabase {
  id: string;
  workspaceId: string;
  physicalName: string;
  /** When the database was created: nothing of it is observed or metered before. */
  created: Date;
}

/** One data-plane server and the databases a pass samples on it. */
export interface ServerToSample {
  /** The data-plane server's id (DataPlane reaches it by it): the samples' `server_key`. */
  key: string;
  databases: SampledDatabase[];
}

export interface PassResult {
  sampled: number;
  up: number;
  statementsAvailable: boolean;
  /**
   * Databases recorded down without a probe: the server was found not answering (see
   * TelemetrySampler.probe), so the rest of its probes were not run.
   */
  unprobed: number;
}

/** Passes this process ran, or skipped as stale, by outcome (for /metrics). */
export interface PassCounts {
  /** Every database probed. */
  sampled: number;
  /** The server did not answer: some databases recorded down without a probe. */
  serverNotAnswering: number;
  /** Not run: the job's slot was over when it came to run (a backlog). */
  skippedStale: number;
}

/** Names per statistics query, and rows per insert. */
const BATCH = 1000;
/** Statement timeout of the statistics queries of a pass. */
const STATS_TIMEOUT_MS = 10000;
/** The repeatable job's id: one schedule per queue, whoever adds it. */
const SCHEDULE_JOB_ID = 'telemetry-schedule';

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Runs `work` over `items`, at most `limit` at once. */
async function mapBounded<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]);
    }
  });
  await Promise.all(lanes);
  return results;
}

/** Increase of a cumulative counter; null when there is no earlier reading or it went backwards (a reset). */
function increase(previous: string | null | undefined, current: string | null | undefined): bigint | null {
  if (previous == null || current == null) return null;
  const delta = BigInt(current) - BigInt(previous);
  return delta >= 0n ? delta : null;
}

/**
 * The insights sampler: one pass per data-plane server per interval (a repeatable `telemetry`
 * job fans out one job per server), not one job per database. A pass reads the server's
 * statistics views for all its databases in a few queries, probes each database with bounded
 * concurrency and a short timeout (until the server is found not answering: see `probe`), and
 * records one sample per database (batched inserts) plus the month's storage held. No metadata
 * transaction is open while the data plane is asked.
 */
@Injectable()
export class TelemetrySampler {
  private readonly logger = new Logger(TelemetrySampler.name);
  private readonly counts: PassCounts = { sampled: 0, serverNotAnswering: 0, skippedStale: 0 };

  constructor(
    private readonly samples: InsightsRepository,
    private readonly config: AppConfig,
    private readonly dataPlane: DataPlane,
    private readonly answers: ServerAnswers,
    private readonly databases: DatabasesService,
    private readonly jobs: JobDispatcher,
    private readonly txHost: MetadataTransactions,
  ) {}

  private get intervalMs(): number {
    return this.config.env.TELEMETRY_INTERVAL_SECONDS * 1000;
  }

  /**
   * Adds the repeatable schedule job (idempotent: Bull keys it by name and interval), and removes
   * a schedule left by an earlier configuration of the interval. Who calls it, and so which
   * processes keep the schedule, is TelemetrySchedule's business (QueueProcessorsModule). With
   * `onlyIfLost` (the operator CLI's reconcile), a schedule already there is left as it is, whatever
   * its interval: the processes running the processors keep it at theirs.
   */
  async ensureSchedule({ onlyIfLost = false } = {}): Promise<void> {
    const schedule = JOBS.ScheduleTelemetryPasses;
    await this.jobs.command(schedule.queue, async (queue) => {
      const scheduled = (await queue.getRepeatableJobs()).filter((job) => job.name === schedule.name);
      if (onlyIfLost && scheduled.length) return;
      for (const job of scheduled) {
        if (Number(job.every) !== this.intervalMs) await queue.removeRepeatableByKey(job.key);
      }
      await queue.add(
        schedule.name,
        {},
        { repeat: { every: this.intervalMs }, jobId: SCHEDULE_JOB_ID, removeOnComplete: true, removeOnFail: true },
      );
    });
  }

  /**
   * One data-plane server to sample and its usable databases (READY, not finalized), oldest first;
   * null when it has none (or `key` names no server). One indexed read of that server's rows: a
   * pass never reads the rest of the fleet.
   */
  async serverToSample(key: string): Promise<ServerToSample | null> {
    const databases = await this.databases.usableOnServer(key);
    return databases.length ? { key, databases } : null;
  }

  /** The schedule job: one pass job per server for the current slot, then pruning. */
  async schedulePasses(now = new Date()): Promise<number> {
    const at = new Date(Math.floor(now.getTime() / this.intervalMs) * this.intervalMs);
    let enqueued = 0;
    // Only the servers' ids: each pass reads its own server's databases.
    for (const serverKey of await this.databases.serversWithUsable()) {
      const ok = await this.jobs.dispatch(
        'SampleTelemetryServer',
        { serverKey, at: at.toISOString() },
        { jobId: sampleServerJobId(serverKey, at) },
      );
      if (ok) enqueued++;
    }
    await this.prune(now);
    return enqueued;
  }

  /** Passes this process ran, or skipped as stale, since it started. */
  get passCounts(): Readonly<PassCounts> {
    return this.counts;
  }

  /**
   * The pass job: the pass of `serverKey` for the slot starting at `at`, unless that slot is over
   * (a backlog: the passes of one server follow one another, so a late one would read the server's
   * counters now and record them at `at`, and the next slot's pass is due anyway). Null when skipped
   * or when the server has no usable database.
   */
  async runPassJob(serverKey: string, at: Date, now = new Date()): Promise<PassResult | null> {
    const lateMs = now.getTime() - at.getTime();
    if (lateMs >= this.intervalMs) {
      this.counts.skippedStale++;
      this.logger.warn(
        { server: serverKey, at: at.toISOString(), lateSeconds: Math.round(lateMs / 1000) },
        'telemetry pass skipped: its interval is over (the next pass samples the server)',
      );
      return null;
    }
    return this.runPass(serverKey, at);
  }

  /** One pass: samples the server named, if it still has usable databases. */
  async runPass(serverKey: string, at: Date): Promise<PassResult | null> {
    const server = await this.serverToSample(serverKey);
    return server ? this.sampleServer(server, at) : null;
  }

  /**
   * One pass over one server at `at`: statistics of all its databases, a ready probe of each, one
   * sample per database (a pass already recorded for a database at `at` is kept, not doubled).
   */
  async sampleServer(sampled: ServerToSample, at = new Date()): Promise<PassResult> {
    // A database created after `at` (read by a pass that ran late) is the next pass's.
    const server = { ...sampled, databases: sampled.databases.filter((d) => d.created < at) };
    const access = await this.dataPlane.telemetryAccess(server.key);
    const telemetry = new ServerTelemetry(access.admin, STATS_TIMEOUT_MS);
    const names = server.databases.map((d) => d.physicalName);

    const askedAt = Date.now();
    const counters = new Map<string, DatabaseCounters>();
    let statements: Map<string, StatementCounters> | null = new Map();
    let statisticsUnanswered = false;
    let statisticsFailure: string | undefined;
    try {
      for (const batch of chunks(names, BATCH)) {
        for (const c of await telemetry.databaseCounters(batch)) counters.set(c.physicalName, c);
        const found = await telemetry.statementCounters(batch);
        if (!found) statements = null;
        else for (const s of found) statements?.set(s.physicalName, s);
      }
    } catch (err) {
      // The probes below still say whether customers can reach their databases.
      this.logger.warn({ server: server.key, err: String(err) }, 'could not read data-plane statistics');
      statements = null;
      statisticsUnanswered = isUnavailability(err);
      statisticsFailure = messageOf(err);
    }
    // What placement knows of the server (this process's view, see ServerAnswers).
    if (names.length) {
      if (statisticsUnanswered) this.answers.unanswered(server.key, statisticsFailure, askedAt);
      else this.answers.answered(server.key, askedAt);
    }
    const probes = await this.probe(server, access.databaseUrl, statisticsUnanswered);
    const unprobed = probes.filter((p) => p === null).length;
    if (unprobed) {
      this.logger.warn(
        { server: server.key, unprobed, databases: server.databases.length },
        'data-plane server not answering: the rest of its databases are recorded down without a probe',
      );
    }

    let recorded = 0;
    for (const [offset, batch] of chunks(server.databases, BATCH).entries()) {
      // Baselines read and samples written in the server's turn (metadata statements only: what
      // was read of the server is read above).
      recorded += await this.txHost.withTransaction(async () => {
        await this.samples.lockServerSamples(server.key);
        const ids = batch.map((d) => d.id);
        // A database a later pass has sampled already: that sample's deltas reach back to the
        // baseline this pass takes, so this one records what it observed (up or down, its size, its
        // counters as read) but no deltas, which would count that stretch's errors and calls twice.
        const overtaken = await this.samples.sampledAfter(ids, at);
        // The latest sample before `at` (within a day) of each database: the baseline of the deltas.
        const previous = await this.samples.previousSamples(ids, at, {
          counters: counters.size > 0,
          statements: statements !== null,
        });
        const rows = batch.map((d, i): NewSample => {
          const prev = previous.get(d.id);
          const c = counters.get(d.physicalName);
          const s = statements?.get(d.physicalName);
          const gapSeconds = prev ? (at.getTime() - prev.sampled_at.getTime()) / 1000 : null;
          // The statement deltas span from when their baseline was read (earlier than the previous
          // sample when that one's statistics read failed).
          const statementsSpan = prev?.statements_sampled_at
            ? (at.getTime() - prev.statements_sampled_at.getTime()) / 1000
            : gapSeconds;
          // The first sample of a database observes at most the time since it was created.
          const sinceCreated = (at.getTime() - d.created.getTime()) / 1000;
          const observed = Math.max(
            1,
            Math.min(this.config.env.TELEMETRY_INTERVAL_SECONDS, Math.round(gapSeconds ?? sinceCreated)),
          );
          const current: Record<string, string> | null = c
            ? Object.fromEntries(
                ERROR_COUNTERS.map((name) => [name, this.counterOf(c, name)]).filter(
                  (e): e is [string, string] => e[1] !== null,
                ),
              )
            : null;
          const errorDeltas: Record<string, number> = {};
          for (const name of ERROR_COUNTERS) {
            const delta = increase(prev?.counters?.[name], current?.[name]);
            if (delta !== null) errorDeltas[name] = Number(delta);
          }
          // A database with no statement recorded yet has made no calls.
          const calls = statements ? (s?.calls ?? '0') : null;
          const execMs = statements ? (s?.execTimeMs ?? 0) : null;
          const callsDelta = increase(prev?.statement_calls, calls);
          const execDelta =
            callsDelta !== null && execMs !== null && prev?.statement_exec_ms != null
              ? Math.max(0, execMs - prev.statement_exec_ms)
              : null;
          // Not probed (the server did not answer): down, as its probe would have found.
          const isUp = probes[offset * BATCH + i] === 'up';
          const counted = !overtaken.has(d.id);
          return {
            database_id: d.id,
            workspace_id: d.workspaceId,
            server_key: server.key,
            observed_seconds: observed,
            up_seconds: isUp ? observed : 0,
            size_bytes: c?.sizeBytes ?? null,
            delta_seconds: counted ? statementsSpan : null,
            counters: current,
            error_deltas: counted && Object.keys(errorDeltas).length ? errorDeltas : null,
            statements_available: statements !== null,
            statement_calls: calls,
            statement_exec_ms: execMs,
            statement_calls_delta: counted && callsDelta !== null ? callsDelta.toString() : null,
            statement_exec_ms_delta: counted ? execDelta : null,
          };
        });
        // The samples and the storage they add to each database's month, in one statement.
        return this.samples.insertSamplesWithStorage(rows, at);
      });
    }
    const result: PassResult = {
      sampled: recorded,
      up: probes.filter((p) => p === 'up').length,
      statementsAvailable: statements !== null,
      unprobed,
    };
    if (unprobed) this.counts.serverNotAnswering++;
    else this.counts.sampled++;
    this.logger.debug({ server: server.key, ...result }, 'telemetry pass');
    return result;
  }

  /**
   * The ready probes of the server's databases, at most TELEMETRY_PROBE_CONCURRENCY at once, each
   * within TELEMETRY_PROBE_TIMEOUT_MS; null for a database not probed. Once the server is found not
   * answering, no further probe starts: each would wait its timeout out, and a pass over a server
   * that accepts connections and never answers took ceil(databases / concurrency) timeouts (about
   * 190 s for 1,000 databases at the defaults, past the interval, while every other server's passes
   * waited). Not answering: as many probes unanswered in a row as run at once (a whole wave), or a
   * single one when the server's statistics could not be read for want of an answer either (one
   * wave of probes confirms it: the admin pool can fail for reasons of its own, a busy pool). A
   * pass over such a server then costs about the statistics read's connect timeout and one probe
   * timeout, however many databases it holds.
   */
  private async probe(
    server: ServerToSample,
    databaseUrl: (physical: string) => string,
    statisticsUnanswered: boolean,
  ): Promise<(ProbeOutcome | null)[]> {
    const { TELEMETRY_PROBE_TIMEOUT_MS: timeout, TELEMETRY_PROBE_CONCURRENCY: concurrency } = this.config.env;
    const enough = statisticsUnanswered ? 1 : concurrency;
    let unansweredInRow = 0;
    return mapBounded(server.databases, concurrency, async (d) => {
      if (unansweredInRow >= enough) return null;
      const outcome = await probeDatabase(databaseUrl, d.physicalName, timeout);
      unansweredInRow = outcome === 'unanswered' ? unansweredInRow + 1 : 0;
      return outcome;
    });
  }

  /** Deletes samples older than TELEMETRY_RETENTION_DAYS, in bounded batches. Answers how many. */
  async prune(now = new Date()): Promise<number> {
    const before = new Date(now.getTime() - this.config.env.TELEMETRY_RETENTION_DAYS * 86400_000);
    return this.samples.pruneSamplesBefore(before);
  }

  private counterOf(c: DatabaseCounters, name: (typeof ERROR_COUNTERS)[number]): string | null {
    switch (name) {
      case 'xact_rollback':
        return c.xactRollback;
      case 'deadlocks':
        return c.deadlocks;
      case 'conflicts':
        return c.conflicts;
      case 'sessions_abandoned':
        return c.sessionsAbandoned;
      case 'sessions_fatal':
        return c.sessionsFatal;
      case 'sessions_killed':
        return c.sessionsKilled;
    }
  }
}
