import type { JobName } from '../queues/job-registry';

/**
 * Jobs of the `compute-lifecycle` queue. Each carries only the instance id: the job converges the
 * instance to the state its row asks for, whatever that is by the time it runs. The name and id
 * say which change the job was enqueued for, so a resize to another size is never swallowed by a
 * job that was already running for the previous one (deterministic ids: duplicates collapse).
 */
export const ComputeJobs = {
  Provision: 'provision',
  Resize: 'resize',
  Terminate: 'terminate',
} as const;

export interface ComputeJobData {
  instanceId: string;
}

export interface ComputeJob {
  /** The job's name in the registry (JOBS). */
  job: Extract<JobName, 'ProvisionCompute' | 'ResizeCompute' | 'TerminateCompute'>;
  jobId: string;
}

/** The job that brings an instance to the state its row asks for. */
export function computeJobFor(instance: {
  id: string;
  deleted: Date | null;
  instanceTypeId: string | null;
  desiredInstanceTypeId: string;
}): ComputeJob {
  if (instance.deleted) return { job: 'TerminateCompute', jobId: `compute-terminate:${instance.id}` };
  if (!instance.instanceTypeId) return { job: 'ProvisionCompute', jobId: `compute-provision:${instance.id}` };
  return {
    job: 'ResizeCompute',
    jobId: `compute-resize:${instance.id}:${instance.desiredInstanceTypeId}`,
  };
}
