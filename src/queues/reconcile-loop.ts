import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { JobDispatcher } from './job-dispatcher';
import { Reconciler } from './reconciler';

/**
 * Starts the periodic reconcile pass in a process that runs the queue processors (see
 * QueueProcessorsModule), and a pass whenever Redis is back after it was lost (work owed meanwhile
 * was not enqueued).
 */
@Injectable()
export class ReconcileLoop implements OnApplicationBootstrap {
  constructor(
    private readonly reconciler: Reconciler,
    private readonly jobs: JobDispatcher,
  ) {}

  onApplicationBootstrap(): void {
    this.reconciler.start();
    this.jobs.onRedisBack(() => void this.reconciler.runAfresh());
  }
}
