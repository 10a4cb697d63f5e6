import { Injectable } from '@nestjs/common';
import type { ComputeUsagePeriodEntity } from '../compute/compute-usage-period.entity';
import { ComputeUsagePeriodsRepository } from '../compute/compute-usage-periods.repository';
import { DatabasesService } from '../databases/databases.service';

/**
 * Read side of the compute usage periods (written by the compute lifecycle): what metrics and
 * billing measure, the same spans for both. Periods of databases since deleted are included: their
 * compute costs apply until the deletion was due, and history stays history.
 */
@Injectable()
export class ComputeUsagePeriods {
  constructor(
    private readonly periods: ComputeUsagePeriodsRepository,
    private readonly databases: DatabasesService,
  ) {}

  /**
   * The workspace's periods that overlap `[from, to)`, oldest first (in the context's transaction, if
   * any). A period still open whose database's deletion is due ends then (not before it began): its
   * finalization, which records that end, may be waiting for an unreachable data plane, and the
   * customer pays for the grace period only.
   */
  async overlapping(workspaceId: string, from: Date, to: Date): Promise<ComputeUsagePeriodEntity[]> {
    const periods = await this.periods.overlapping(workspaceId, from, to);
    const open = periods.filter((p) => p.endedAt === null);
    if (!open.length) return periods;
    const due = await this.databases.deletionDueTimes([...new Set(open.map((p) => p.databaseId))]);
    for (const period of open) {
      const end = due.get(period.databaseId);
      if (end) period.endedAt = end.getTime() < period.startedAt.getTime() ? period.startedAt : end;
    }
    return periods;
  }

  /** Ids of the workspaces with a period overlapping `[from, to)`. */
  workspacesWithUsage(from: Date, to: Date): Promise<string[]> {
    return this.periods.workspacesOverlapping(from, to);
  }
}
