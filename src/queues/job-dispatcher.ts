import { getQueueToken } from '@nestjs/bull';
import { Injectable, Logger } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { Queue } from 'bull';
import { AppConfig } from '../config/app-config';
import { QueueName } from './queue-names';
import { currentReconcileTally } from './reconcile-tally';

export interface DispatchOptions {
  /** Deterministic id: the same piece of work always has the same id, so duplicates collapse. */
  jobId: string;
  delayMs?: number;
}

const ENQUEUE_TIMEOUT_MS = 2000;

/**
 * Enqueues work after the state change is committed. PostgreSQL holds the truth, so a failed
 * enqueue (Redis down) is logged and left to the reconciler; the request still succeeds.
 */
@Injectable()
export class JobDispatcher {
  private readonly logger = new Logger(JobDispatcher.name);

  constructor(
    private readonly moduleRef: ModuleRef,
    private readonly config: AppConfig,
  ) {}

  queue(name: QueueName): Queue {
    return this.moduleRef.get<Queue>(getQueueToken(name), { strict: false });
  }

  async dispatch(queue: QueueName, job: string, data: object, options: DispatchOptions): Promise<boolean> {
    const q = this.queue(queue);
    const add = q.add(job, data, {
      jobId: options.jobId,
      delay: options.delayMs && options.delayMs > 0 ? options.delayMs : undefined,
      attempts: this.config.env.JOB_ATTEMPTS,
      backoff: { type: 'exponential', delay: this.config.env.JOB_BACKOFF_MS },
      removeOnComplete: true,
      removeOnFail: false,
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`enqueue timed out after ${ENQUEUE_TIMEOUT_MS} ms`)),
        ENQUEUE_TIMEOUT_MS,
      );
    });
    try {
      await Promise.race([add, timeout]);
      currentReconcileTally.getStore()?.count(queue);
      return true;
    } catch (err) {
      add.catch(() => undefined);
      this.logger.warn(
        { queue, job, jobId: options.jobId, err: String(err) },
        'enqueue failed; the reconciler will retry',
      );
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Re-enqueues a job whose earlier run failed for good (it sits in the failed set under the same
   * id, which would otherwise swallow the new add).
   */
  async redispatch(queue: QueueName, job: string, data: object, options: DispatchOptions): Promise<boolean> {
    try {
      const existing = await this.queue(queue).getJob(options.jobId);
      if (existing && (await existing.isFailed())) await existing.remove();
    } catch (err) {
      this.logger.warn({ queue, jobId: options.jobId, err: String(err) }, 'could not inspect existing job');
    }
    return this.dispatch(queue, job, data, options);
  }
}
