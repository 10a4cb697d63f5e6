import { Injectable } from '@nestjs/common';
import type { ComputeUsagePeriodEntity } from '../compute/compute-usage-period.entity';
import { ComputeUsagePeriodsRepository } from '../compute/compute-usage-periods.repository';

/**
 * Read side of the compute usage periods (written by the compute lifecycle): what metrics and
 * billing measure. Periods of databases since deleted are included: compute costs apply until a
 * deletion is finalized, and history stays history.
 */
@Injectable()
export class ComputeUsagePeriods {
  constructor(private readonly periods: ComputeUsagePeriodsRepository) {}

  /** The workspace's periods that overlap `[from, to)`, oldest first (in the context's transaction, if any). */
  overlapping(workspaceId: string, from: Date, to: Date): Promise<ComputeUsagePeriodEntity[]> {
    return this.periods.overlapping(workspaceId, from, to);
  }

  /** Ids of the workspaces with a period overlapping `[from, to)`. */
  workspacesWithUsage(from: Date, to: Date): Promise<string[]> {
    return this.periods.workspacesOverlapping(from, to);
  }
}
