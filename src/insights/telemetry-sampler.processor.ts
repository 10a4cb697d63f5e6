import { Process, Processor } from '@nestjs/bull';
import type { Job } from 'bull';
import { Queues } from '../queues/queue-names';
import { type SampleServerJobData, TELEMETRY_PASSES_AT_ONCE, TelemetryJobs } from './telemetry-jobs';
import { TelemetrySampler } from './telemetry-sampler.service';

/** Worker side of the `telemetry` queue. */
@Processor(Queues.Telemetry)
export class TelemetrySamplerProcessor {
  constructor(private readonly sampler: TelemetrySampler) {}

  @Process(TelemetryJobs.Schedule)
  async schedule(): Promise<void> {
    await this.sampler.schedulePasses();
  }

  /** Several at once: a server that does not answer holds one of them, not the queue (TELEMETRY_PASSES_AT_ONCE). */
  @Process({ name: TelemetryJobs.SampleServer, concurrency: TELEMETRY_PASSES_AT_ONCE })
  async sampleServer(job: Job<SampleServerJobData>): Promise<void> {
    const at = new Date(job.data.at);
    if (Number.isNaN(at.getTime())) return; // not a job this service enqueues
    await this.sampler.runPassJob(job.data.serverKey, at);
  }
}
