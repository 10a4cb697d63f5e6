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

export type ComputeJobName = (typeof ComputeJobs)[keyof typeof ComputeJobs];

export interface ComputeJobData {
  instanceId: string;
}

export interface ComputeJob {
  name: ComputeJobName;
  jobId: string;
}

/** The job that brings an instance to the state its row asks for. */
export function computeJobFor(instance: {
  id: string;
  deleted: Date | null;
  instanceTypeId: string | null;
  desiredInstanceTypeId: string;
}): ComputeJob {
  if (instance.deleted) return { name: ComputeJobs.Terminate, jobId: `compute-terminate:${instance.id}` };
  if (!instance.instanceTypeId) return { name: ComputeJobs.Provision, jobId: `compute-provision:${instance.id}` };
  return {
    name: ComputeJobs.Resize,
    jobId: `compute-resize:${instance.id}:${instance.desiredInstanceTypeId}`,
  };
}
