import { withinMs } from '../common/within-ms';
import { getQueueToken } from '@nestjs/bull';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { Queue } from 'bull';
import { AppConfig } from '../config/app-config';
import { JOBS, type JobName, type JobPayload } from './job-registry';
import { ALL_QUEUES, QueueName } from './queue-names';
import { currentReconcileTally } from './reconcile-tally';

export interface DispatchOptions {
  /** Deterministic id: the same piece of work always has the same id, so duplicates collapse. */
  jobId: string;
  delayMs?: number;
  /** Taken before the queue's other waiting jobs (someone's request is waiting for it). */
  urgent?: boolean;
}

/**
 * A job whose attempts ran out stays in its queue's failed set for inspection (the dashboard, the
 * metrics' `failed` count); each later failure in the queue trims the set to the last week and the
 * last 1,000 jobs (Bull trims when a job finishes): without a bound, every outage left its jobs there
 * for good (many job ids are used once). The reconciler re-enqueues what is still owed either way
 * (redispatch).
 */
export const FAILED_JOBS_KEPT = { age: 7 * 24 * 3600, count: 1000 };

const ENQUEUE_TIMEOUT_MS = 2000;

/**
 * Enqueues work after the state change is committed. PostgreSQL holds the truth, so a failed
 * enqueue (Redis down) is logged and left to the reconciler; the request still succeeds.
 */
@Injectable()
export class JobDispatcher implements OnModuleInit {
  private readonly logger = new Logger(JobDispatcher.name);
  /** Queues whose connection to Redis closed and has not been ready since. */
  private readonly away = new Set<QueueName>();
  private readonly backListeners: (() => void)[] = [];

  constructor(
    private readonly moduleRef: ModuleRef,
    private readonly config: AppConfig,
  ) {}

  queue(name: QueueName): Queue {
    return this.moduleRef.get<Queue>(getQueueToken(name), { strict: false });
  }

  onModuleInit(): void {
    for (const name of ALL_QUEUES) {
      const client = this.queue(name).client;
      client.on('close', () => this.away.add(name));
      client.on('ready', () => this.back(name));
    }
  }

  /**
   * False while the queue's connection to Redis is lost, or a command on it went unanswered for
   * ENQUEUE_TIMEOUT_MS (until Redis answers again). Nothing then waits for Redis: a command would
   * wait out the connection's reconnection attempts (~10 s), or for as long as a Redis that keeps its
   * connections answers nothing; a reconcile pass over owed work took minutes, or never ended, and a
   * shutdown waited for it. What is skipped meanwhile is enqueued by the reconciler, which runs a
   * pass as soon as Redis is back.
   */
  answering(name: QueueName): boolean {
    return !this.away.has(name);
  }

  /** Calls `listener` whenever every queue's connection is back after one was lost. */
  onRedisBack(listener: () => void): void {
    this.backListeners.push(listener);
  }

  /** Enqueues a registered job on its queue (JOBS says which, and what its payload is). */
  async dispatch<N extends JobName>(job: N, data: JobPayload<N>, options: DispatchOptions): Promise<boolean> {
    const { queue, name } = JOBS[job];
    if (!this.answering(queue)) {
      this.logger.warn({ queue, job: name, jobId: options.jobId }, 'Redis away: not enqueued; the reconciler will');
      this.notEnqueued();
      return false;
    }
    const add = (bull: Queue) =>
      bull.add(name, data, {
        jobId: options.jobId,
        delay: options.delayMs && options.delayMs > 0 ? options.delayMs : undefined,
        // Bull takes a job with a priority (1 the highest) before every job without one.
        priority: options.urgent ? 1 : undefined,
        attempts: this.config.env.JOB_ATTEMPTS,
        backoff: { type: 'exponential', delay: this.config.env.JOB_BACKOFF_MS },
        removeOnComplete: true,
        removeOnFail: FAILED_JOBS_KEPT,
      });
    try {
      await this.command(queue, add);
      currentReconcileTally.getStore()?.count(queue);
      return true;
    } catch (err) {
      this.logger.warn(
        { queue, job: name, jobId: options.jobId, err: String(err) },
        'enqueue failed; the reconciler will retry',
      );
      this.notEnqueued();
      return false;
    }
  }

  /** A reconcile task's job not enqueued: the task has not done its work (reported failed, retried next pass). */
  private notEnqueued(): void {
    const tally = currentReconcileTally.getStore();
    if (tally) tally.notEnqueued++;
  }

  /**
   * Re-enqueues a job whose earlier run failed for good (it sits in the failed set under the same
   * id, which would otherwise swallow the new add).
   */
  async redispatch<N extends JobName>(job: N, data: JobPayload<N>, options: DispatchOptions): Promise<boolean> {
    const { queue } = JOBS[job];
    if (!this.answering(queue)) return this.dispatch(job, data, options);
    try {
      await this.command(queue, async (bull) => {
        const existing = await bull.getJob(options.jobId);
        if (existing && (await existing.isFailed())) await existing.remove();
      });
    } catch (err) {
      this.logger.warn({ queue, jobId: options.jobId, err: String(err) }, 'could not inspect existing job');
    }
    return this.dispatch(job, data, options);
  }

  /**
   * What `work` does with the queue, within ENQUEUE_TIMEOUT_MS; refused at once while the queue is
   * away. Past the timeout every queue counts as away until its connection answers a PING (or is
   * ready again after closing): the rest of a reconcile pass, and every request meanwhile, passes over
   * them at once instead of each waiting its own timeout.
   */
  async command<T>(queue: QueueName, work: (bull: Queue) => Promise<T>): Promise<T> {
    if (!this.answering(queue)) throw new Error(`Redis is away (queue ${queue})`);
    const unanswered = new Error(`Redis did not answer within ${ENQUEUE_TIMEOUT_MS} ms`);
    try {
      return await withinMs(work(this.queue(queue)), ENQUEUE_TIMEOUT_MS, () => unanswered);
    } catch (err) {
      if (err === unanswered) {
        // The queues share one Redis: one not answering says the others would not either.
        this.logger.warn({ queue }, 'Redis not answering: the queues count as away until it does');
        for (const name of ALL_QUEUES.filter((name) => !this.away.has(name))) {
          this.away.add(name);
          this.queue(name)
            .client.ping()
            .then(
              () => this.back(name),
              () => undefined, // the connection closed: its 'ready' brings the queue back
            );
        }
      }
      throw err;
    }
  }

  private back(queue: QueueName): void {
    if (!this.away.delete(queue) || this.away.size > 0) return;
    for (const listener of this.backListeners) listener();
  }
}
