import { Process, Processor } from '@nestjs/bull';
import type { Job } from 'bull';
import { Queues } from '../queues/queue-names';
import { type SampleServerJobData, TelemetryJobs } from './telemetry-jobs';
import { TelemetrySampler } from './telemetry-sampler.service';

/** Worker side of the `telemetry` queue. */
@Processor(Queues.Telemetry)
export class TelemetrySamplerProcessor {
  constructor(private readonly sampler: TelemetrySampler) {}

  @Process(TelemetryJobs.Schedule)
  async schedule(): Promise<void> {
    await this.sampler.schedulePasses();
  }

  @Process(TelemetryJobs.SampleServer)
  async sampleServer(job: Job<SampleServerJobData>): Promise<void> {
    const at = new Date(job.data.at);
    if (Number.isNaN(at.getTime())) return; // not a job this service enqueues
    await this.sampler.runPass(job.data.serverKey, at);
  }
}
