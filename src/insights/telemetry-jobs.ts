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

/** One pass per server and interval slot: duplicates (two schedulers, a retry) collapse. */
export const sampleServerJobId = (serverKey: string, at: Date) => `sample:${serverKey}:${at.getTime()}`;
