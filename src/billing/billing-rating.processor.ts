import { Process, Processor } from '@nestjs/bull';
import type { Job } from 'bull';
import { Queues } from '../queues/queue-names';
import { BillingJobs, type RateMonthJobData } from './billing-jobs';
import { parseBillingMonth } from './billing-month';
import { BillingRater } from './billing-rater.service';

/** Worker side of the `billing` queue: re-rates one workspace's month (idempotent). */
@Processor(Queues.Billing)
export class BillingRatingProcessor {
  constructor(private readonly rater: BillingRater) {}

  @Process(BillingJobs.RateMonth)
  async rateMonth(job: Job<RateMonthJobData>): Promise<void> {
    const month = parseBillingMonth(job.data.ym);
    if (!month) return; // not a month this service enqueues; nothing to rate
    await this.rater.rate(job.data.workspaceId, month);
  }
}
