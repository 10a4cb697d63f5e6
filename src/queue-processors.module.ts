import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { BillingRatingProcessor } from './billing/billing-rating.processor';
import { BillingModule } from './billing/billing.module';
import { ComputeLifecycleProcessor } from './compute/compute-lifecycle.processor';
import { ComputeModule } from './compute/compute.module';
import { CredentialExpiryProcessor } from './credentials/credential-expiry.processor';
import { CredentialsModule } from './credentials/credentials.module';
import { DatabaseLifecycleProcessor } from './databases/database-lifecycle.processor';
import { DatabasesModule } from './databases/databases.module';
import { InviteEmailProcessor } from './invites/invite-email.processor';
import { InsightsModule } from './insights/insights.module';
import { TelemetrySamplerProcessor } from './insights/telemetry-sampler.processor';
import { TelemetrySchedule } from './insights/telemetry-schedule';
import { InvitesModule } from './invites/invites.module';
import { JobHandlerCheck } from './queues/job-handler-check';
import { ReconcileLoop } from './queues/reconcile-loop';

/** Every queue processor: between them, exactly one handler per job of the registry (JOBS). */
export const QUEUE_PROCESSORS = [
  DatabaseLifecycleProcessor,
  CredentialExpiryProcessor,
  ComputeLifecycleProcessor,
  InviteEmailProcessor,
  BillingRatingProcessor,
  TelemetrySamplerProcessor,
];

/**
 * What makes a process a worker: the queue processors of the feature modules (each calls its
 * module's exported service), the reconcile loop, and the schedule of the periodic jobs
 * (TelemetrySchedule). A process runs them exactly when this module
 * is part of what it boots (WorkerModule always, the API unless WORKERS=off), not because of an
 * environment variable read while modules are defined. Such a process refuses to start unless the
 * processors' handlers match the job registry (JobHandlerCheck); one without it never checks.
 */
@Module({
  imports: [
    DiscoveryModule,
    DatabasesModule,
    CredentialsModule,
    ComputeModule,
    InvitesModule,
    BillingModule,
    InsightsModule,
  ],
  providers: [...QUEUE_PROCESSORS, JobHandlerCheck, ReconcileLoop, TelemetrySchedule],
})
export class QueueProcessorsModule {}
