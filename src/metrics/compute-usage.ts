import type {
  DatabaseComputeUsage,
  InstancePeriodComputeUsage,
  TimeSeriesPoint,
  WorkspaceComputeUsage,
} from './compute-usage.response';

/** A span during which an instance ran at one size (a compute usage period). */
export interface UsageSpan {
  instanceId: string;
  databaseId: string;
  computeSize: string;
  vcpus: number;
  startedAt: Date;
  /** null while the instance still runs. */
  endedAt: Date | null;
}

export const CHART_BUCKET_MS = 3_600_000;
const MS_PER_HOUR = 3_600_000;

const round6 = (value: number) => Math.round(value * 1e6) / 1e6;
const vcpuHours = (vcpus: number, ms: number) => (vcpus * ms) / MS_PER_HOUR;

interface Clipped {
  span: UsageSpan;
  from: number;
  to: number;
}

/**
 * The workspace's compute usage within `[start, end)`: every span clipped to the window and to
 * `now` (a running instance counts up to now), summed per instance and per database, and an hourly
 * chart of the vCPUs in use.
 */
export function summarizeComputeUsage(spans: UsageSpan[], start: Date, end: Date, now: Date): WorkspaceComputeUsage {
  const windowStart = start.getTime();
  const windowEnd = Math.min(end.getTime(), now.getTime());
  const clipped: Clipped[] = spans
    .map((span) => ({
      span,
      from: Math.max(span.startedAt.getTime(), windowStart),
      to: Math.min(span.endedAt?.getTime() ?? Infinity, windowEnd),
    }))
    .filter((c) => c.to > c.from)
    .sort((a, b) => a.from - b.from || a.span.instanceId.localeCompare(b.span.instanceId));

  const byDatabase = new Map<string, Map<string, Clipped[]>>();
  for (const c of clipped) {
    const instances = byDatabase.get(c.span.databaseId) ?? new Map<string, Clipped[]>();
    byDatabase.set(c.span.databaseId, instances);
    const parts = instances.get(c.span.instanceId);
    if (parts) parts.push(c);
    else instances.set(c.span.instanceId, [c]);
  }

  const usageByDatabase: Record<string, DatabaseComputeUsage> = {};
  let workspaceTotal = 0;
  for (const [databaseId, instances] of byDatabase) {
    const usageByInstance: Record<string, InstancePeriodComputeUsage> = {};
    let databaseTotal = 0;
    let databaseFrom = Infinity;
    let databaseTo = -Infinity;
    for (const [instanceId, parts] of instances) {
      const total = parts.reduce((sum, c) => sum + vcpuHours(c.span.vcpus, c.to - c.from), 0);
      const from = parts[0].from;
      const to = parts.reduce((latest, c) => Math.max(latest, c.to), -Infinity);
      usageByInstance[instanceId] = {
        totalVCPUHours: round6(total),
        size: parts[parts.length - 1].span.computeSize,
        start: new Date(from),
        end: new Date(to),
        spans: parts.map((c) => ({
          totalVCPUHours: round6(vcpuHours(c.span.vcpus, c.to - c.from)),
          size: c.span.computeSize,
          start: new Date(c.from),
          end: new Date(c.to),
        })),
      };
      databaseTotal += total;
      databaseFrom = Math.min(databaseFrom, from);
      databaseTo = Math.max(databaseTo, to);
    }
    usageByDatabase[databaseId] = {
      usageByInstance,
      totalVCPUHours: round6(databaseTotal),
      start: new Date(databaseFrom),
      end: new Date(databaseTo),
    };
    workspaceTotal += databaseTotal;
  }

  return {
    usageByDatabase,
    chartData: { points: hourlyPoints(clipped, windowStart, windowEnd), maxCPUCount: peakVcpus(clipped) },
    totalVCPUHours: round6(workspaceTotal),
    start,
    end,
  };
}

/**
 * Buckets of one hour from the window's start; y = average vCPUs in use during the bucket. Each span
 * adds to the buckets it overlaps only, so the work grows with the spans and the hours they cover,
 * not with their product (a workspace resized thousands of times over a 93-day window).
 */
function hourlyPoints(clipped: Clipped[], from: number, to: number): TimeSeriesPoint[] {
  const buckets = Math.max(0, Math.ceil((to - from) / CHART_BUCKET_MS));
  const vcpuMs = new Float64Array(buckets);
  for (const c of clipped) {
    const last = Math.min(buckets - 1, Math.floor((c.to - 1 - from) / CHART_BUCKET_MS));
    for (let i = Math.floor((c.from - from) / CHART_BUCKET_MS); i <= last; i++) {
      const bucket = from + i * CHART_BUCKET_MS;
      const overlap = Math.min(c.to, bucket + CHART_BUCKET_MS) - Math.max(c.from, bucket);
      if (overlap > 0) vcpuMs[i] += c.span.vcpus * overlap;
    }
  }
  return Array.from(vcpuMs, (used, i) => {
    const bucket = from + i * CHART_BUCKET_MS;
    return { x: bucket, y: round6(used / (Math.min(bucket + CHART_BUCKET_MS, to) - bucket)) };
  });
}

/** The most vCPUs running at the same moment (a span ending as another starts does not overlap it). */
function peakVcpus(clipped: Clipped[]): number {
  const events = clipped.flatMap((c) => [
    { at: c.from, delta: c.span.vcpus },
    { at: c.to, delta: -c.span.vcpus },
  ]);
  events.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let current = 0;
  let peak = 0;
  for (const e of events) {
    current += e.delta;
    peak = Math.max(peak, current);
  }
  return peak;
}
