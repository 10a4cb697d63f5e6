import { computeJobFor } from './compute-jobs';

const base = { id: 'i1', deleted: null, instanceTypeId: null, desiredInstanceTypeId: 'dc-small' };

describe('computeJobFor (which job converges an instance)', () => {
  it('provisions an instance that never ran', () => {
    expect(computeJobFor(base)).toEqual({ job: 'ProvisionCompute', jobId: 'compute-provision:i1' });
  });

  it('resizes a running instance, one job id per target size', () => {
    const running = { ...base, instanceTypeId: 'dc-small', desiredInstanceTypeId: 'dc-large' };
    expect(computeJobFor(running)).toEqual({ job: 'ResizeCompute', jobId: 'compute-resize:i1:dc-large' });
  });

  it('terminates a deleted instance, whatever its size', () => {
    const deleted = { ...base, instanceTypeId: 'dc-small', deleted: new Date() };
    expect(computeJobFor(deleted)).toEqual({ job: 'TerminateCompute', jobId: 'compute-terminate:i1' });
  });
});
