import { BillingJobs, type RateMonthJobData } from '../billing/billing-jobs';
import { ComputeJobs, type ComputeJobData } from '../compute/compute-jobs';
import { CredentialJobs, type ExpireCredentialJobData } from '../credentials/credential-jobs';
import {
  DatabaseJobs,
  type DatabaseJobData,
  type ProvisionJobData,
  type RefillPoolJobData,
} from '../databases/database-jobs';
import { type SampleServerJobData, TelemetryJobs } from '../insights/telemetry-jobs';
import { type InviteEmailJobData, SEND_INVITE_EMAIL } from '../invites/invite-jobs';
import { type QueueName, Queues } from './queue-names';

/**
 * One registered job: the queue it runs on and its Bull job name (what is stored in Redis, so it
 * never changes: jobs queued by an earlier version must still find their handler). `T` is the
 * payload's type; it exists for the compiler only.
 */
export interface JobDefinition<T extends object = object> {
  readonly queue: QueueName;
  readonly name: string;
  /** Never set: carries the payload type (see JobPayload). */
  readonly payload?: T;
}

function job<T extends object>(queue: QueueName, name: string): JobDefinition<T> {
  return { queue, name };
}

/**
 * Every job the service runs, by registry name. Bull names repeat across queues (`provision` is a
 * database job and a compute job), so a job is named here by what it does, and a (queue, Bull name)
 * pair appears once. JobDispatcher takes a registry name and the payload its entry declares; a
 * process that runs the processors refuses to start unless each entry has exactly one handler
 * (`@Process(name)` on a `@Processor(queue)`) and no handler is left without an entry
 * (JobHandlerCheck).
 */
export const JOBS = {
  ProvisionDatabase: job<ProvisionJobData>(Queues.DatabaseLifecycle, DatabaseJobs.Provision),
  FinalizeDatabaseDeletion: job<DatabaseJobData>(Queues.DatabaseLifecycle, DatabaseJobs.FinalizeDeletion),
  RefillDatabasePool: job<RefillPoolJobData>(Queues.DatabaseLifecycle, DatabaseJobs.RefillPool),
  ExpireCredential: job<ExpireCredentialJobData>(Queues.CredentialExpiry, CredentialJobs.Expire),
  SendInviteEmail: job<InviteEmailJobData>(Queues.InviteEmail, SEND_INVITE_EMAIL),
  ProvisionCompute: job<ComputeJobData>(Queues.ComputeLifecycle, ComputeJobs.Provision),
  ResizeCompute: job<ComputeJobData>(Queues.ComputeLifecycle, ComputeJobs.Resize),
  TerminateCompute: job<ComputeJobData>(Queues.ComputeLifecycle, ComputeJobs.Terminate),
  RateBillingMonth: job<RateMonthJobData>(Queues.Billing, BillingJobs.RateMonth),
  /** Repeatable (TelemetrySampler.ensureSchedule adds it with its own options); no payload. */
  ScheduleTelemetryPasses: job<Record<string, never>>(Queues.Telemetry, TelemetryJobs.Schedule),
  SampleTelemetryServer: job<SampleServerJobData>(Queues.Telemetry, TelemetryJobs.SampleServer),
} as const satisfies Record<string, JobDefinition>;

export type JobName = keyof typeof JOBS;

/** The payload a job's handler receives, as its registry entry declares it. */
export type JobPayload<N extends JobName> = NonNullable<(typeof JOBS)[N]['payload']>;

/** What the handler check reads of a registry (the service's is JOBS; its tests pass their own). */
export type JobRegistry = Readonly<Record<string, { readonly queue: string; readonly name: string }>>;
