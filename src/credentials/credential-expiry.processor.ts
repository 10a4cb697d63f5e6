import { Process, Processor } from '@nestjs/bull';
import type { Job } from 'bull';
import { Queues } from '../queues/queue-names';
import { CredentialJobs, type ExpireCredentialJobData } from './credential-jobs';
import { CredentialsService } from './credentials.service';

/** Worker side of the `credential-expiry` queue: drops a credential's role once its expiry has passed. */
@Processor(Queues.CredentialExpiry)
export class CredentialExpiryProcessor {
  constructor(private readonly credentials: CredentialsService) {}

  @Process(CredentialJobs.Expire)
  async expire(job: Job<ExpireCredentialJobData>): Promise<void> {
    await this.credentials.expire(job.data.credentialId);
  }
}
