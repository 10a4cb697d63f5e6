import type { ModuleRef } from '@nestjs/core';
import type { AppConfig } from '../config/app-config';
import { JobDispatcher } from './job-dispatcher';
import { JOBS } from './job-registry';

describe('job registry', () => {
  it('keeps the Bull job names and queues that installed versions have stored in Redis', () => {
    // A queued job finds its handler by (queue, name): renaming one strands the jobs already waiting.
    expect(Object.fromEntries(Object.entries(JOBS).map(([job, { queue, name }]) => [job, `${queue}/${name}`]))).toEqual(
      {
        ProvisionDatabase: 'database-lifecycle/provision',
        FinalizeDatabaseDeletion: 'database-lifecycle/finalize-deletion',
        RefillDatabasePool: 'database-lifecycle/refill-pool',
        ExpireCredential: 'credential-expiry/expire',
        SendInviteEmail: 'invite-email/send',
        ProvisionCompute: 'compute-lifecycle/provision',
        ResizeCompute: 'compute-lifecycle/resize',
        TerminateCompute: 'compute-lifecycle/terminate',
        RateBillingMonth: 'billing/rate-month',
        ScheduleTelemetryPasses: 'telemetry/schedule-passes',
        SampleTelemetryServer: 'telemetry/sample-server',
      },
    );
  });

  it('dispatches a job by its registry name onto its queue, under its Bull name', async () => {
    const added: unknown[] = [];
    const moduleRef = {
      get: (token: string) => ({ add: (...args: unknown[]) => Promise.resolve(void added.push([token, ...args])) }),
    } as unknown as ModuleRef;
    const config = { env: { JOB_ATTEMPTS: 3, JOB_BACKOFF_MS: 1000 } } as AppConfig;
    const jobs = new JobDispatcher(moduleRef, config);

    expect(await jobs.dispatch('ProvisionCompute', { instanceId: 'i1' }, { jobId: 'compute-provision:i1' })).toBe(true);
    expect(added).toEqual([
      [
        'BullQueue_compute-lifecycle',
        'provision',
        { instanceId: 'i1' },
        expect.objectContaining({
          jobId: 'compute-provision:i1',
          attempts: 3,
          removeOnComplete: true,
          removeOnFail: { age: 604800, count: 1000 },
        }),
      ],
    ]);
  });
});

/**
 * Compile-time only (`npm run typecheck`; never called): the payload is checked against the job's
 * registry entry, and only registered jobs can be dispatched.
 */
export function dispatchIsTypedByTheRegistry(jobs: JobDispatcher): void {
  void jobs.dispatch('ProvisionDatabase', { databaseId: 'd1' }, { jobId: 'provision:d1' });
  void jobs.redispatch('SendInviteEmail', { inviteId: 'i1' }, { jobId: 'invite-email:i1' });
  // @ts-expect-error a database job's payload names a database, not an instance
  void jobs.dispatch('ProvisionDatabase', { instanceId: 'i1' }, { jobId: 'provision:d1' });
  // @ts-expect-error the payload's fields are required
  void jobs.redispatch('RateBillingMonth', { workspaceId: 'w1' }, { jobId: 'rate:w1' });
  // @ts-expect-error a Bull job name is not a registry name (the queue would be ambiguous)
  void jobs.dispatch('provision', { databaseId: 'd1' }, { jobId: 'provision:d1' });
}
