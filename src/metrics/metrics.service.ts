import { Injectable } from '@nestjs/common';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { ComputeUsagePeriods } from './compute-usage-periods.service';
import type { WorkspaceComputeUsage } from './compute-usage.response';
import { summarizeComputeUsage } from './compute-usage';

export const DEFAULT_METRICS_WINDOW_MS = 24 * 3_600_000;
export const MAX_METRICS_WINDOW_DAYS = 93;

@Injectable()
export class MetricsService {
  constructor(private readonly periods: ComputeUsagePeriods) {}

  /**
   * The workspace's dedicated compute usage within `[start, end)`; by default the 24 hours up to
   * now. One record (the published response is an array of them).
   */
  async computeUsage(workspace: WorkspaceEntity, start?: string, end?: string): Promise<WorkspaceComputeUsage[]> {
    const now = new Date();
    const to = end ? new Date(end) : now;
    // The default window starts no earlier than 1970, the earliest start that can be asked for.
    if (!start && to.getTime() <= 0) {
      throw new ApiException(ErrorCode.BadRequest, 'end must be after 1970-01-01T00:00:00Z when start is not given');
    }
    const from = start ? new Date(start) : new Date(Math.max(0, to.getTime() - DEFAULT_METRICS_WINDOW_MS));
    if (from.getTime() >= to.getTime()) {
      throw new ApiException(ErrorCode.BadRequest, 'start must be before end');
    }
    if (to.getTime() - from.getTime() > MAX_METRICS_WINDOW_DAYS * 86_400_000) {
      throw new ApiException(
        ErrorCode.BadRequest,
        `The window from start to end may span at most ${MAX_METRICS_WINDOW_DAYS} days`,
      );
    }
    const spans = await this.periods.overlapping(workspace.id, from, to);
    return [summarizeComputeUsage(spans, from, to, now)];
  }
}
