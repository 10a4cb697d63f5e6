import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { ComputeUsagePeriodEntity } from '../compute/compute-usage-period.entity';

/**
 * Read side of the compute usage periods (written by the compute lifecycle): what metrics and
 * billing measure. Periods of databases since deleted are included: compute costs apply until a
 * deletion is finalized, and history stays history.
 */
@Injectable()
export class ComputeUsagePeriods {
  constructor(
    @InjectRepository(ComputeUsagePeriodEntity) private readonly periods: Repository<ComputeUsagePeriodEntity>,
  ) {}

  /** The workspace's periods that overlap `[from, to)`, oldest first (within the caller's transaction, if given). */
  overlapping(workspaceId: string, from: Date, to: Date, manager?: EntityManager): Promise<ComputeUsagePeriodEntity[]> {
    return (manager?.getRepository(ComputeUsagePeriodEntity) ?? this.periods)
      .createQueryBuilder('p')
      .where('p.workspace_id = :workspaceId', { workspaceId })
      .andWhere('p.started_at < :to', { to })
      .andWhere('(p.ended_at IS NULL OR p.ended_at > :from)', { from })
      .orderBy('p.started_at', 'ASC')
      .addOrderBy('p.id', 'ASC')
      .getMany();
  }

  /** Ids of the workspaces with a period overlapping `[from, to)`. */
  async workspacesWithUsage(from: Date, to: Date): Promise<string[]> {
    const rows = await this.periods
      .createQueryBuilder('p')
      .select('DISTINCT p.workspace_id', 'workspace_id')
      .where('p.started_at < :to', { to })
      .andWhere('(p.ended_at IS NULL OR p.ended_at > :from)', { from })
      .getRawMany<{ workspace_id: string }>();
    return rows.map((r) => r.workspace_id);
  }
}
