import { summarizeComputeUsage, UsageSpan } from './compute-usage';

const H = 3_600_000;
const t0 = new Date('2025-04-10T00:00:00Z');
const at = (hours: number) => new Date(t0.getTime() + hours * H);

function span(partial: Partial<UsageSpan> & Pick<UsageSpan, 'startedAt' | 'endedAt'>): UsageSpan {
  return { instanceId: 'i1', databaseId: 'd1', computeSize: 'small', vcpus: 2, ...partial };
}

describe('compute usage summary', () => {
  it('sums vCPU-hours per instance and database, clipped to the window', () => {
    const usage = summarizeComputeUsage(
      [
        span({ startedAt: at(-2), endedAt: at(3) }), // 3 h in the window at 2 vCPUs
        span({ computeSize: 'medium', vcpus: 4, startedAt: at(3), endedAt: at(5) }), // 2 h at 4
        span({ instanceId: 'i2', databaseId: 'd2', vcpus: 8, computeSize: 'large', startedAt: at(4), endedAt: null }),
      ],
      at(0),
      at(6),
      at(100),
    );
    expect(usage.totalVCPUHours).toBe(6 + 8 + 16);
    expect(usage.start).toEqual(at(0));
    expect(usage.end).toEqual(at(6));
    expect(usage.usageByDatabase.d1).toEqual({
      totalVCPUHours: 14,
      start: at(0),
      end: at(5),
      usageByInstance: {
        i1: {
          totalVCPUHours: 14,
          size: 'medium',
          start: at(0),
          end: at(5),
          spans: [
            { totalVCPUHours: 6, size: 'small', start: at(0), end: at(3) },
            { totalVCPUHours: 8, size: 'medium', start: at(3), end: at(5) },
          ],
        },
      },
    });
    expect(usage.usageByDatabase.d2.totalVCPUHours).toBe(16);
    expect(usage.chartData.points).toEqual([
      { x: at(0).getTime(), y: 2 },
      { x: at(1).getTime(), y: 2 },
      { x: at(2).getTime(), y: 2 },
      { x: at(3).getTime(), y: 4 },
      { x: at(4).getTime(), y: 12 },
      { x: at(5).getTime(), y: 8 },
    ]);
    // 4 + 8 at hour 4; the resize at hour 3 does not count both sizes at once.
    expect(usage.chartData.maxCPUCount).toBe(12);
  });

  it('counts a running instance up to now and stops the chart at now', () => {
    const usage = summarizeComputeUsage([span({ startedAt: at(0), endedAt: null })], at(0), at(24), at(1.5));
    expect(usage.totalVCPUHours).toBe(3);
    expect(usage.usageByDatabase.d1.usageByInstance.i1.end).toEqual(at(1.5));
    expect(usage.chartData.points).toEqual([
      { x: at(0).getTime(), y: 2 },
      { x: at(1).getTime(), y: 2 },
    ]);
  });

  it('averages partial use of a bucket', () => {
    const usage = summarizeComputeUsage([span({ startedAt: at(0.25), endedAt: at(0.75) })], at(0), at(1), at(10));
    expect(usage.chartData.points).toEqual([{ x: at(0).getTime(), y: 1 }]);
    expect(usage.chartData.maxCPUCount).toBe(2);
    expect(usage.totalVCPUHours).toBe(1);
  });

  it('is empty when nothing ran in the window', () => {
    const usage = summarizeComputeUsage([span({ startedAt: at(-5), endedAt: at(-1) })], at(0), at(2), at(10));
    expect(usage).toEqual({
      usageByDatabase: {},
      chartData: {
        points: [
          { x: at(0).getTime(), y: 0 },
          { x: at(1).getTime(), y: 0 },
        ],
        maxCPUCount: 0,
      },
      totalVCPUHours: 0,
      start: at(0),
      end: at(2),
    });
  });
});
