import { Process, Processor } from '@nestjs/bull';
import type { Job } from 'bull';
import { Queues } from '../queues/queue-names';
import { DatabaseJobs, type DatabaseJobData, type ProvisionJobData, type RefillPoolJobData } from './database-jobs';
import { DatabaseLifecycle } from './database-lifecycle.service';
import { WarmPool } from './warm-pool.service';

/** Worker side of the `database-lifecycle` queue; every step it calls is idempotent. */
@Processor(Queues.DatabaseLifecycle)
export class DatabaseLifecycleProcessor {
  constructor(
    private readonly lifecycle: DatabaseLifecycle,
    private readonly pool: WarmPool,
  ) {}

  @Process(DatabaseJobs.Provision)
  async provision(job: Job<ProvisionJobData>): Promise<void> {
    await this.lifecycle.provision(job.data.databaseId, job.data.placement);
  }

  @Process(DatabaseJobs.FinalizeDeletion)
  async finalize(job: Job<DatabaseJobData>): Promise<void> {
    await this.lifecycle.finalize(job.data.databaseId, new Date(), { job: true });
  }

  @Process(DatabaseJobs.RefillPool)
  async refillPool(job: Job<RefillPoolJobData>): Promise<void> {
    if (job.data.serverId) await this.pool.refill(job.data.serverId);
    else if (job.data.region) await this.pool.refillRegion(job.data.region);
  }
}
