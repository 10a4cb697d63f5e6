import { AsyncLocalStorage } from 'node:async_hooks';
import type { QueueName } from './queue-names';

/** What one reconcile task dispatched during a pass, counted by the dispatcher. */
export class ReconcileTally {
  readonly enqueued = new Map<QueueName, number>();
  /** Jobs the task owed and could not enqueue (Redis away or refusing): its work is not done. */
  notEnqueued = 0;

  count(queue: QueueName): void {
    this.enqueued.set(queue, (this.enqueued.get(queue) ?? 0) + 1);
  }
}

/**
 * The tally of the reconcile task running in this async context (none outside a pass). The
 * dispatcher counts into it, so what a pass re-enqueued is known without each task reporting it.
 */
export const currentReconcileTally = new AsyncLocalStorage<ReconcileTally>();

/** Cumulative figures of this process's reconciler, read by /metrics. */
export interface ReconcilerStats {
  passes: number;
  lastPassEndedAt?: Date;
  /** Runs per task and outcome, with why the last failed run failed (its message). */
  taskRuns: Map<string, { ok: number; failed: number; lastError?: string }>;
  /** Jobs dispatched per task and queue (a job whose id is already queued collapses into it). */
  enqueued: Map<string, Map<QueueName, number>>;
}
