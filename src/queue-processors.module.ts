import { Module } from '@nestjs/common';
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
import { InvitesModule } from './invites/invites.module';
import { ReconcileLoop } from './queues/reconcile-loop';

/**
 * What makes a process a worker: the queue processors of the feature modules (each calls its
 * module's exported service) and the reconcile loop. A process runs them exactly when this module
 * is part of what it boots (WorkerModule always, the API unless WORKERS=off), not because of an
 * environment variable read while modules are defined.
 */
@Module({
  imports: [DatabasesModule, CredentialsModule, ComputeModule, InvitesModule, BillingModule, InsightsModule],
  providers: [
    DatabaseLifecycleProcessor,
    CredentialExpiryProcessor,
    ComputeLifecycleProcessor,
    InviteEmailProcessor,
    BillingRatingProcessor,
    TelemetrySamplerProcessor,
    ReconcileLoop,
  ],
})
export class QueueProcessorsModule {}
