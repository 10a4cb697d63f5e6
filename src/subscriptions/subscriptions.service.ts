import { lockForTransaction } from '../database/transaction-lock';
import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, Repository } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { isUuid } from '../common/http/uuid';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { SubscriptionLevel } from './subscription-level';
import { SubscriptionEntity } from './subscription.entity';

const NO_ACTIVE = 'No active subscription';

/**
 * A workspace's subscription is a history of rows, each one level over `[validFrom, validTo)`; the
 * current one is the row whose range contains now. A change closes the current row at the moment
 * it takes effect and opens the next row there, so a change scheduled for later needs no job: the
 * rows are written at once and time makes the next one current. Rows starting later than now are
 * "pending" and any new write replaces them.
 *
 * Every workspace holds FREE from its creation until told otherwise: a workspace without any row
 * gets that row the first time its subscription is read or written.
 *
 * Writes of one workspace are serialised by a transaction-scoped advisory lock.
 */
@Injectable()
export class SubscriptionsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(SubscriptionEntity) private readonly subscriptions: Repository<SubscriptionEntity>,
  ) {}

  /** The current row; 404 entity_not_found when the subscription was closed and none started since. */
  async current(workspace: WorkspaceEntity): Promise<SubscriptionEntity> {
    const found = await this.findCurrent(this.dataSource.manager, workspace.id, new Date());
    if (found) return found;
    const materialized = await this.locked(workspace, (tx, now) => this.findCurrent(tx, workspace.id, now));
    if (!materialized) throw new ApiException(ErrorCode.EntityNotFound, NO_ACTIVE);
    return materialized;
  }

  /** The level held now (read through `manager`, e.g. inside a caller's transaction); null when no row is current. */
  async levelNow(
    workspaceId: string,
    manager: EntityManager = this.dataSource.manager,
  ): Promise<SubscriptionLevel | null> {
    return (await this.findCurrent(manager, workspaceId, new Date()))?.level ?? null;
  }

  /** Every row, the latest first. */
  async history(workspace: WorkspaceEntity): Promise<SubscriptionEntity[]> {
    const order = { validFrom: 'DESC', created: 'DESC' } as const;
    const rows = await this.subscriptions.find({ where: { workspaceId: workspace.id }, order });
    if (rows.length) return rows;
    return this.locked(workspace, (tx) =>
      tx.getRepository(SubscriptionEntity).find({ where: { workspaceId: workspace.id }, order }),
    );
  }

  /** Starts a subscription now; 409 duplicate_entity while one is current. */
  start(workspace: WorkspaceEntity, level: SubscriptionLevel, callerId: string): Promise<SubscriptionEntity> {
    return this.locked(workspace, async (tx, now) => {
      const current = await this.findCurrent(tx, workspace.id, now);
      if (current) {
        throw new ApiException(
          ErrorCode.DuplicateEntity,
          `The workspace already has a current subscription (${current.level} since ${current.validFrom.toISOString()}); change its level with PUT`,
        );
      }
      await this.dropPending(tx, workspace.id, now);
      return tx
        .getRepository(SubscriptionEntity)
        .save({ workspaceId: workspace.id, level, validFrom: now, validTo: null, changedBy: callerId });
    });
  }

  /**
   * Changes the level at `effectiveAt` (now when omitted): the current row ends there and a row at
   * the new level starts there. Pending rows (an earlier scheduled change) are replaced; asking for
   * the level already current just cancels them. Answers the row that holds the level asked for.
   */
  change(
    workspace: WorkspaceEntity,
    level: SubscriptionLevel,
    callerId: string,
    effectiveAt?: Date,
  ): Promise<SubscriptionEntity> {
    this.refusePast(effectiveAt, 'validFrom');
    return this.locked(workspace, async (tx, now) => {
      const repo = tx.getRepository(SubscriptionEntity);
      const current = await this.findCurrent(tx, workspace.id, now);
      if (!current) throw new ApiException(ErrorCode.EntityNotFound, `${NO_ACTIVE}; start one with POST`);
      await this.dropPending(tx, workspace.id, now);
      const at = effectiveAt && effectiveAt.getTime() > now.getTime() ? effectiveAt : now;
      if (current.level === level || current.validFrom.getTime() === at.getTime()) {
        // Same level: nothing changes but the pending rows are gone. Same instant as the current
        // row's start: the row has not held its level for any time, so it simply takes the new one.
        if (current.level !== level) current.changedBy = callerId;
        current.level = level;
        current.validTo = null;
        return repo.save(current);
      }
      current.validTo = at;
      await repo.save(current);
      return repo.save({ workspaceId: workspace.id, level, validFrom: at, validTo: null, changedBy: callerId });
    });
  }

  /**
   * Ends the current subscription at `endAt` (now when omitted); pending rows are dropped. Rows
   * already ended or not yet started cannot be closed (400): a scheduled change is cancelled by
   * changing to the current level.
   */
  close(workspace: WorkspaceEntity, subscriptionId: string, endAt?: Date): Promise<SubscriptionEntity> {
    if (!isUuid(subscriptionId)) throw this.noSuchRow();
    this.refusePast(endAt, 'validTo');
    return this.locked(workspace, async (tx, now) => {
      const repo = tx.getRepository(SubscriptionEntity);
      const row = await repo.findOneBy({ id: subscriptionId, workspaceId: workspace.id });
      if (!row) throw this.noSuchRow();
      if (row.validFrom.getTime() > now.getTime()) {
        throw new ApiException(
          ErrorCode.BadRequest,
          `Subscription ${row.id} has not started yet; to cancel a scheduled change, change to the current level with PUT`,
        );
      }
      if (row.validTo && row.validTo.getTime() <= now.getTime()) {
        throw new ApiException(
          ErrorCode.BadRequest,
          `Subscription ${row.id} already ended at ${row.validTo.toISOString()}`,
        );
      }
      await this.dropPending(tx, workspace.id, now);
      row.validTo = endAt && endAt.getTime() > now.getTime() ? endAt : now;
      return repo.save(row);
    });
  }

  /** The workspace's rows overlapping `[from, to)`, oldest first (what billing rates; within the caller's transaction, if given). */
  overlapping(workspaceId: string, from: Date, to: Date, manager?: EntityManager): Promise<SubscriptionEntity[]> {
    return (manager?.getRepository(SubscriptionEntity) ?? this.subscriptions)
      .createQueryBuilder('s')
      .where('s.workspace_id = :workspaceId', { workspaceId })
      .andWhere('s.valid_from < :to', { to })
      .andWhere('(s.valid_to IS NULL OR s.valid_to > :from)', { from })
      .orderBy('s.valid_from', 'ASC')
      .addOrderBy('s.id', 'ASC')
      .getMany();
  }

  /** Ids of the workspaces with a row overlapping `[from, to)`. */
  async workspacesWithSubscriptions(from: Date, to: Date): Promise<string[]> {
    const rows = await this.subscriptions
      .createQueryBuilder('s')
      .select('DISTINCT s.workspace_id', 'workspace_id')
      .where('s.valid_from < :to', { to })
      .andWhere('(s.valid_to IS NULL OR s.valid_to > :from)', { from })
      .getRawMany<{ workspace_id: string }>();
    return rows.map((r) => r.workspace_id);
  }

  private findCurrent(manager: EntityManager, workspaceId: string, now: Date): Promise<SubscriptionEntity | null> {
    return manager
      .getRepository(SubscriptionEntity)
      .createQueryBuilder('s')
      .where('s.workspace_id = :workspaceId', { workspaceId })
      .andWhere('s.valid_from <= :now', { now })
      .andWhere('(s.valid_to IS NULL OR s.valid_to > :now)', { now })
      .orderBy('s.valid_from', 'DESC')
      .getOne();
  }

  /**
   * Runs `work` in a transaction holding the workspace's subscription lock (`now` is read once the
   * lock is held), after giving a workspace without any row its FREE row, from the workspace's
   * creation. That row is committed on its own: a refused request still leaves it in place.
   */
  private async locked<T>(workspace: WorkspaceEntity, work: (tx: EntityManager, now: Date) => Promise<T>): Promise<T> {
    if (!(await this.subscriptions.existsBy({ workspaceId: workspace.id }))) {
      await this.dataSource.transaction(async (tx) => {
        await this.lock(tx, workspace.id);
        const repo = tx.getRepository(SubscriptionEntity);
        if (await repo.existsBy({ workspaceId: workspace.id })) return;
        await repo.insert({
          workspaceId: workspace.id,
          level: SubscriptionLevel.Free,
          validFrom: workspace.created,
          validTo: null,
          changedBy: null,
        });
      });
    }
    return this.dataSource.transaction(async (tx) => {
      await this.lock(tx, workspace.id);
      return work(tx, new Date());
    });
  }

  private async lock(tx: EntityManager, workspaceId: string): Promise<void> {
    await lockForTransaction(tx, `subscriptions:${workspaceId}`);
  }

  private async dropPending(tx: EntityManager, workspaceId: string, now: Date): Promise<void> {
    await tx
      .getRepository(SubscriptionEntity)
      .createQueryBuilder()
      .delete()
      .where('workspace_id = :workspaceId AND valid_from > :now', { workspaceId, now })
      .execute();
  }

  private refusePast(at: Date | undefined, field: string): void {
    if (at && at.getTime() < Date.now()) {
      throw new ApiException(ErrorCode.BadRequest, `${field} must not be in the past`);
    }
  }

  private noSuchRow(): ApiException {
    return new ApiException(ErrorCode.EntityNotFound, 'No such subscription in this workspace');
  }
}
