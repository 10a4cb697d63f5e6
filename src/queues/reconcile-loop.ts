import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { Reconciler } from './reconciler';

/** Starts the periodic reconcile pass in a process that runs the queue processors (see QueueProcessorsModule). */
@Injectable()
export class ReconcileLoop implements OnApplicationBootstrap {
  constructor(private readonly reconciler: Reconciler) {}

  onApplicationBootstrap(): void {
    this.reconciler.start();
  }
}
