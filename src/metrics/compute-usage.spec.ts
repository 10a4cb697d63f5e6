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

  it('charts each bucket as the vCPU-weighted overlap of every span with it, whatever the spans', () => {
    // A reference computed the plain way (every bucket against every span), on irregular spans.
    let seed = 7;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    const spans = Array.from({ length: 300 }, (_, i) => {
      const startedAt = at(random() * 100 - 10);
      const open = random() < 0.1;
      return span({
        instanceId: `i${i % 7}`,
        databaseId: `d${i % 3}`,
        vcpus: 1 + Math.floor(random() * 8),
        startedAt,
        endedAt: open ? null : new Date(startedAt.getTime() + random() * 30 * H),
      });
    });
    const start = at(0);
    const end = at(72.5);
    const now = at(80);
    const { chartData } = summarizeComputeUsage(spans, start, end, now);
    const expected: { x: number; y: number }[] = [];
    for (let bucket = start.getTime(); bucket < end.getTime(); bucket += H) {
      const bucketEnd = Math.min(bucket + H, end.getTime());
      let vcpuMs = 0;
      for (const s of spans) {
        const from = Math.max(s.startedAt.getTime(), bucket);
        const to = Math.min(s.endedAt?.getTime() ?? Infinity, bucketEnd);
        if (to > from) vcpuMs += s.vcpus * (to - from);
      }
      expected.push({ x: bucket, y: vcpuMs / (bucketEnd - bucket) });
    }
    expect(chartData.points).toHaveLength(expected.length);
    chartData.points.forEach((point, i) => {
      expect(point.x).toBe(expected[i].x);
      expect(point.y).toBeCloseTo(expected[i].y, 5);
    });
  });

  it('summarizes an instance resized hundreds of thousands of times', () => {
    // One span a minute for 200 days: more parts than a function call takes arguments.
    const spans = Array.from({ length: 288_000 }, (_, i) => span({ startedAt: at(i / 60), endedAt: at((i + 1) / 60) }));
    const usage = summarizeComputeUsage(spans, at(0), at(93 * 24), at(10_000));
    expect(usage.usageByDatabase.d1.usageByInstance.i1.end).toEqual(at(93 * 24));
    expect(usage.totalVCPUHours).toBeCloseTo(2 * 93 * 24, 3);
    expect(usage.chartData.points).toHaveLength(93 * 24);
  });
});
