import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import type { QueueName } from './queue-names';
import { currentReconcileTally, ReconcilerStats, ReconcileTally } from './reconcile-tally';

export type ReconcileTask = () => Promise<unknown>;

/**
 * The periodic loop that makes lost jobs harmless: every interval it asks each registered task to
 * re-enqueue (or finish) work for resources not yet in their desired state. Started only where the
 * queue processors run (ReconcileLoop, part of QueueProcessorsModule). Tasks are idempotent; jobs carry deterministic ids, so overlap just collapses.
 */
@Injectable()
export class Reconciler implements OnApplicationShutdown {
  private readonly logger = new Logger(Reconciler.name);
  private readonly tasks = new Map<string, ReconcileTask>();
  private timer?: NodeJS.Timeout;
  private firstPass?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = false;
  private readonly figures: ReconcilerStats = { passes: 0, taskRuns: new Map(), enqueued: new Map() };

  constructor(private readonly config: AppConfig) {}

  register(name: string, task: ReconcileTask): void {
    this.tasks.set(name, task);
  }

  /** The first pass RECONCILE_FIRST_PASS_SECONDS from now, then one every RECONCILE_INTERVAL_SECONDS. */
  start(): void {
    if (this.timer) return;
    const { RECONCILE_FIRST_PASS_SECONDS, RECONCILE_INTERVAL_SECONDS } = this.config.env;
    this.firstPass = setTimeout(() => void this.runOnce(), RECONCILE_FIRST_PASS_SECONDS * 1000);
    this.firstPass.unref();
    this.timer = setInterval(() => void this.runOnce(), RECONCILE_INTERVAL_SECONDS * 1000);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.firstPass);
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass over every task (also used by tests and the `reconcile` operator command). */
  runOnce(): Promise<void> {
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  /** A pass that starts once the one under way (if any) has ended: for work that one may have skipped. */
  async runAfresh(): Promise<void> {
    await this.running;
    if (!this.stopped) await this.runOnce();
  }

  /** Passes, task outcomes and what the tasks re-enqueued, since this process started. */
  get stats(): Readonly<ReconcilerStats> {
    return this.figures;
  }

  /**
   * Each task in turn. At shutdown the pass ends after the task under way: the rest (an inline
   * finalization may wait for its DROP DATABASE up to the DDL timeout) would outlast the process's
   * grace period, and every task is done again by the next pass of whatever process runs next.
   */
  private async pass(): Promise<void> {
    for (const [name, task] of this.tasks) {
      if (this.stopped) return;
      const tally = new ReconcileTally();
      const runs = this.figures.taskRuns.get(name) ?? { ok: 0, failed: 0 };
      this.figures.taskRuns.set(name, runs);
      try {
        await currentReconcileTally.run(tally, task);
        if (tally.notEnqueued) {
          throw new Error(`${tally.notEnqueued} jobs it owed could not be enqueued (Redis away or refusing)`);
        }
        runs.ok++;
      } catch (err) {
        runs.failed++;
        // The message and stack only: a failed query's error also carries its parameters.
        const error = err instanceof Error ? { message: err.message, stack: err.stack } : { message: String(err) };
        runs.lastError = error.message;
        this.logger.error({ err: error, task: name }, 'reconcile task failed');
      } finally {
        const enqueued = this.figures.enqueued.get(name) ?? new Map<QueueName, number>();
        for (const [queue, count] of tally.enqueued) enqueued.set(queue, (enqueued.get(queue) ?? 0) + count);
        this.figures.enqueued.set(name, enqueued);
      }
    }
    this.figures.passes++;
    this.figures.lastPassEndedAt = new Date();
  }
}
