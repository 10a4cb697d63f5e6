import { Process, Processor } from '@nestjs/bull';
import type { Job } from 'bull';
import { Queues } from '../queues/queue-names';
import { ComputeJobs, type ComputeJobData } from './compute-jobs';
import { ComputeLifecycle } from './compute-lifecycle.service';

/** Worker side of the `compute-lifecycle` queue: every job converges one instance (idempotent). */
@Processor(Queues.ComputeLifecycle)
export class ComputeLifecycleProcessor {
  constructor(private readonly lifecycle: ComputeLifecycle) {}

  @Process(ComputeJobs.Provision)
  async provision(job: Job<ComputeJobData>): Promise<void> {
    await this.lifecycle.converge(job.data.instanceId);
  }

  @Process(ComputeJobs.Resize)
  async resize(job: Job<ComputeJobData>): Promise<void> {
    await this.lifecycle.converge(job.data.instanceId);
  }

  @Process(ComputeJobs.Terminate)
  async terminate(job: Job<ComputeJobData>): Promise<void> {
    await this.lifecycle.converge(job.data.instanceId);
  }
}
