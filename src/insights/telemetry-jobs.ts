/** Jobs of the `telemetry` queue. */
export const TelemetryJobs = {
  /** Repeatable, every TELEMETRY_INTERVAL_SECONDS: enqueues one pass per server, prunes old samples. */
  Schedule: 'schedule-passes',
  /** One pass over one data-plane server. */
  SampleServer: 'sample-server',
} as const;

export interface SampleServerJobData {
  serverKey: string;
  /** The moment the pass stands for (ISO 8601), the start of its interval slot. */
  at: string;
}

/**
 * Pass jobs one process runs at once (different servers', usually): a server that does not answer
 * holds one of them for a few seconds (see TelemetrySampler.probe) while the other servers' passes go
 * on. Their probes are TELEMETRY_PROBE_CONCURRENCY each, so this times that many connections at most.
 */
export const TELEMETRY_PASSES_AT_ONCE = 4;

/** One pass per server and interval slot: duplicates (two schedulers, a retry) collapse. */
export const sampleServerJobId = (serverKey: string, at: Date) => `sample:${serverKey}:${at.getTime()}`;
