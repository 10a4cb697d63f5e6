/** Jobs of the `billing` queue. */
export const BillingJobs = {
  RateMonth: 'rate-month',
} as const;

export interface RateMonthJobData {
  workspaceId: string;
  /** `YYYY-MM` */
  ym: string;
}

/** One job per workspace and month: sweeps that overlap collapse onto the waiting job. */
export const rateMonthJobId = (workspaceId: string, ym: string) => `rate:${workspaceId}:${ym}`;
