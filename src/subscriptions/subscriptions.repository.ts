import { Injectable } from '@nestjs/common';
import type { Repository } from 'typeorm';
import { MetadataTransactions } from '../database/metadata-transactions';
import { overlappingPeriod } from '../database/period-overlap';
import { windowWait } from '../database/sliding-window';
import { lockForContextTransaction } from '../database/transaction-lock';
import { SubscriptionLevel } from './subscription-level';
import { SubscriptionEntity } from './subscription.entity';

/**
 * Every statement on `subscriptions` (habit 15). Statements go through the transaction the context
 * carries (MetadataTransactions): inside its withTransaction they join it, outside they run on
 * their own.
 */
@Injectable()
export class SubscriptionsRepository {
  constructor(private readonly txHost: MetadataTransactions) {}

  private get repo(): Repository<SubscriptionEntity> {
    return this.txHost.tx.getRepository(SubscriptionEntity);
  }

  /** Serialises the workspace's subscription writes for the rest of the context's transaction. */
  lockWorkspace(workspaceId: string): Promise<void> {
    return lockForContextTransaction(this.txHost, `subscriptions:${workspaceId}`);
  }

  /**
   * Seconds until the workspace's history may gain another row: null while fewer than `limit` of its
   * rows start within the last `windowSeconds` (or later: scheduled changes count). Otherwise the
   * wait ends when the limit-th latest start leaves the window. Read under lockWorkspace, through
   * the (workspace_id, valid_from) index.
   */
  newRowWait(workspaceId: string, limit: number, windowSeconds: number): Promise<number | null> {
    return windowWait(
      this.txHost.tx,
      { table: 'subscriptions', at: 'valid_from', keyColumn: 'workspace_id' },
      workspaceId,
      limit,
      windowSeconds,
    );
  }

  existsFor(workspaceId: string): Promise<boolean> {
    return this.repo.existsBy({ workspaceId });
  }

  /**
   * Inserts the FREE row every workspace holds from its creation (`workspaces.created`, read in the
   * same statement: billing knows a workspace by its id only), marked implicit: no client wrote it.
   * `created` is the metadata database's clock, the subscriptions' times are the service's (`now`):
   * the row starts at `now` where `created` is later, so it is current from the start wherever the
   * database's clock runs ahead.
   */
  async insertFreeFromCreation(workspaceId: string, now: Date): Promise<void> {
    await this.txHost.tx.query(
      `INSERT INTO subscriptions (workspace_id, level, valid_from, valid_to, changed_by, implicit)
       SELECT id, $2, LEAST(created, $3), NULL, NULL, true FROM workspaces WHERE id = $1`,
      [workspaceId, SubscriptionLevel.Free, now],
    );
  }

  save(row: Partial<SubscriptionEntity>): Promise<SubscriptionEntity> {
    return this.repo.save(row);
  }

  findInWorkspace(id: string, workspaceId: string): Promise<SubscriptionEntity | null> {
    return this.repo.findOneBy({ id, workspaceId });
  }

  /** The row whose range contains `now`. */
  findCurrent(workspaceId: string, now: Date): Promise<SubscriptionEntity | null> {
    return this.repo
      .createQueryBuilder('s')
      .where('s.workspace_id = :workspaceId', { workspaceId })
      .andWhere('s.valid_from <= :now', { now })
      .andWhere('(s.valid_to IS NULL OR s.valid_to > :now)', { now })
      .orderBy('s.valid_from', 'DESC')
      .getOne();
  }

  /** The level of the row whose range contains `now` (one raw read: plan checks run on every create). */
  async levelAt(workspaceId: string, now: Date): Promise<SubscriptionLevel | null> {
    const [row] = await this.txHost.tx.query<{ level: SubscriptionLevel }[]>(
      `SELECT level FROM subscriptions
        WHERE workspace_id = $1 AND valid_from <= $2 AND (valid_to IS NULL OR valid_to > $2)
        ORDER BY valid_from DESC LIMIT 1`,
      [workspaceId, now],
    );
    return row?.level ?? null;
  }

  /** Every row of the workspace, the latest first. */
  history(workspaceId: string): Promise<SubscriptionEntity[]> {
    return this.repo.find({ where: { workspaceId }, order: { validFrom: 'DESC', created: 'DESC' } });
  }

  /** The workspace's row that starts last (the current one, or a pending change). */
  findLatest(workspaceId: string): Promise<SubscriptionEntity | null> {
    return this.repo.findOne({ where: { workspaceId }, order: { validFrom: 'DESC' } });
  }

  /** Deletes the rows starting after `now` (pending changes). */
  async dropPending(workspaceId: string, now: Date): Promise<void> {
    await this.repo
      .createQueryBuilder()
      .delete()
      .where('workspace_id = :workspaceId AND valid_from > :now', { workspaceId, now })
      .execute();
  }

  /** When the workspace's first row starts (it holds a level from then on; null: no row). */
  async heldSince(workspaceId: string): Promise<Date | null> {
    const [row] = await this.txHost.tx.query<{ since: Date | null }[]>(
      'SELECT min(valid_from) AS since FROM subscriptions WHERE workspace_id = $1',
      [workspaceId],
    );
    return row.since;
  }

  /** The workspace's rows overlapping `[from, to)`, oldest first. */
  overlapping(workspaceId: string, from: Date, to: Date): Promise<SubscriptionEntity[]> {
    const query = this.repo.createQueryBuilder('s').where('s.workspace_id = :workspaceId', { workspaceId });
    return overlappingPeriod(query, 's.valid_from', 's.valid_to', from, to)
      .orderBy('s.valid_from', 'ASC')
      .addOrderBy('s.id', 'ASC')
      .getMany();
  }

  /** Ids of the workspaces with a row of a paid level (not FREE) overlapping `[from, to)`. */
  async workspacesPayingIn(from: Date, to: Date): Promise<string[]> {
    const query = this.repo
      .createQueryBuilder('s')
      .select('DISTINCT s.workspace_id', 'workspace_id')
      .where('s.level <> :free', { free: SubscriptionLevel.Free });
    const rows = await overlappingPeriod(query, 's.valid_from', 's.valid_to', from, to).getRawMany<{
      workspace_id: string;
    }>();
    return rows.map((r) => r.workspace_id);
  }
}
