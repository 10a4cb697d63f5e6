import { Injectable, Logger, OnApplicationBootstrap, OnModuleInit } from '@nestjs/common';
import { Reconciler } from '../queues/reconciler';
import { TelemetrySampler } from './telemetry-sampler.service';

/** The reconcile task that puts the schedule back (registered by TelemetrySchedule, and by the CLI's reconcile). */
export const TELEMETRY_SCHEDULE_TASK = 'telemetry-schedule';

/**
 * Keeps the telemetry queue's repeatable `schedule-passes` job: adds it at boot, and registers the
 * reconcile task that puts it back when Redis lost it. Part of QueueProcessorsModule, so a process
 * keeps the schedule exactly when it runs the processors (the worker always, the API unless
 * WORKERS=off), whatever WORKERS says in its environment: the worker of docker-compose.yml shares
 * the API's environment, WORKERS=off included.
 */
@Injectable()
export class TelemetrySchedule implements OnModuleInit, OnApplicationBootstrap {
  private readonly logger = new Logger(TelemetrySchedule.name);

  constructor(
    private readonly sampler: TelemetrySampler,
    private readonly reconciler: Reconciler,
  ) {}

  onModuleInit(): void {
    this.reconciler.register(TELEMETRY_SCHEDULE_TASK, () => this.sampler.ensureSchedule());
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.sampler
      .ensureSchedule()
      .catch((err: unknown) =>
        this.logger.warn({ err: String(err) }, 'could not schedule telemetry passes; the reconciler will retry'),
      );
  }
}
