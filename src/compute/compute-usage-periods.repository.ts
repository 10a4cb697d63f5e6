import { Injectable } from '@nestjs/common';
import { IsNull, type Repository } from 'typeorm';
import { MetadataTransactions } from '../database/metadata-transactions';
import { overlappingPeriod } from '../database/period-overlap';
import { ComputeUsagePeriodEntity } from './compute-usage-period.entity';

/**
 * Every statement on `compute_usage_periods` (habit 15): the compute lifecycle's writes and the
 * reads that metrics and billing measure. Statements go through the transaction the context carries
 * (MetadataTransactions): inside its withTransaction they join it, outside they run on their own.
 */
@Injectable()
export class ComputeUsagePeriodsRepository {
  constructor(private readonly txHost: MetadataTransactions) {}

  private get repo(): Repository<ComputeUsagePeriodEntity> {
    return this.txHost.tx.getRepository(ComputeUsagePeriodEntity);
  }

  /** The instance's open period, if any. */
  findOpen(instanceId: string): Promise<ComputeUsagePeriodEntity | null> {
    return this.repo.findOneBy({ instanceId, endedAt: IsNull() });
  }

  async insert(row: Partial<ComputeUsagePeriodEntity>): Promise<void> {
    await this.repo.insert(row);
  }

  /**
   * Closes the period at `at`, or at its start if `at` is before it (clocks of two processes): a
   * period never ends before it began.
   */
  async close(id: string, at: Date): Promise<void> {
    await this.endAt(at).where('id = :id', { id }).execute();
  }

  /** Closes the instance's open period (if any) at `at` (not before its start). */
  async closeOpenOfInstance(instanceId: string, at: Date): Promise<void> {
    await this.endAt(at).where('instance_id = :instanceId AND ended_at IS NULL', { instanceId }).execute();
  }

  /** Closes every open period of the database's instances at `at` (not before their start). */
  async closeOpenOfDatabase(databaseId: string, at: Date): Promise<void> {
    await this.endAt(at).where('database_id = :databaseId AND ended_at IS NULL', { databaseId }).execute();
  }

  private endAt(at: Date) {
    return this.repo
      .createQueryBuilder()
      .update()
      .set({ endedAt: () => 'GREATEST(started_at, :at)' })
      .setParameter('at', at);
  }

  /** The workspace's periods that overlap `[from, to)`, oldest first. */
  overlapping(workspaceId: string, from: Date, to: Date): Promise<ComputeUsagePeriodEntity[]> {
    const query = this.repo.createQueryBuilder('p').where('p.workspace_id = :workspaceId', { workspaceId });
    return overlappingPeriod(query, 'p.started_at', 'p.ended_at', from, to)
      .orderBy('p.started_at', 'ASC')
      .addOrderBy('p.id', 'ASC')
      .getMany();
  }

  /** Ids of the workspaces with a period overlapping `[from, to)`. */
  async workspacesOverlapping(from: Date, to: Date): Promise<string[]> {
    const query = this.repo.createQueryBuilder('p').select('DISTINCT p.workspace_id', 'workspace_id');
    const rows = await overlappingPeriod(query, 'p.started_at', 'p.ended_at', from, to).getRawMany<{
      workspace_id: string;
    }>();
    return rows.map((r) => r.workspace_id);
  }
}
