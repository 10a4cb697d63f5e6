import { Injectable } from '@nestjs/common';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { isUuid } from '../common/http/uuid';
import { AppConfig } from '../config/app-config';
import { MetadataTransactions } from '../database/metadata-transactions';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { SubscriptionLevel } from './subscription-level';
import { SubscriptionEntity } from './subscription.entity';
import { SubscriptionsRepository } from './subscriptions.repository';

const NO_ACTIVE = 'No active subscription';
/** The window of SUBSCRIPTION_CHANGES_PER_DAY. */
const CHANGES_WINDOW_SECONDS = 24 * 3600;

/**
 * A workspace's subscription is a history of rows, each one level over `[validFrom, validTo)`; the
 * current one is the row whose range contains now. A change closes the current row at the moment
 * it takes effect and opens the next row there, so a change scheduled for later needs no job: the
 * rows are written at once and time makes the next one current. Rows starting later than now are
 * "pending" and any new write replaces them.
 *
 * Every workspace holds FREE from its creation until told otherwise: a workspace without any row
 * gets that row the first time its subscription is read or written, or its bill is rated
 * (holdFreeFromCreation), so billing never sees a workspace without the FREE it holds. That row is
 * `implicit` until a client writes the subscription, so a client following the published flow
 * (create a workspace, then POST the level it wants) starts its subscription instead of hearing 409.
 *
 * Writes of one workspace are serialised by a transaction-scoped advisory lock.
 */
@Injectable()
export class SubscriptionsService {
  constructor(
    private readonly txHost: MetadataTransactions,
    private readonly subscriptions: SubscriptionsRepository,
    private readonly config: AppConfig,
  ) {}

  /** The current row; 404 entity_not_found when the subscription was closed and none started since. */
  async current(workspace: WorkspaceEntity): Promise<SubscriptionEntity> {
    const found = await this.subscriptions.findCurrent(workspace.id, new Date());
    if (found) return found;
    const materialized = await this.locked(workspace, (now) => this.subscriptions.findCurrent(workspace.id, now));
    if (!materialized) throw new ApiException(ErrorCode.EntityNotFound, NO_ACTIVE);
    return materialized;
  }

  /** The level held now (in the transaction the context carries, if any); null when no row is current. */
  async levelNow(workspaceId: string): Promise<SubscriptionLevel | null> {
    return this.subscriptions.levelAt(workspaceId, new Date());
  }

  /** Every row, the latest first. */
  async history(workspace: WorkspaceEntity): Promise<SubscriptionEntity[]> {
    const rows = await this.subscriptions.history(workspace.id);
    if (rows.length) return rows;
    return this.locked(workspace, () => this.subscriptions.history(workspace.id));
  }

  /**
   * Starts a subscription at `level` now. While the current row is still the FREE row the workspace
   * was given at its creation (implicit: no client has started, changed or closed the subscription),
   * the level asked for starts from now: PRO exactly as a change effective now (the FREE row ends
   * now, PRO starts now); FREE keeps that row, held since the creation, which from then on counts
   * as started by the client. Otherwise 409 duplicate_entity while a row is current.
   */
  start(workspace: WorkspaceEntity, level: SubscriptionLevel, callerId: string): Promise<SubscriptionEntity> {
    return this.locked(workspace, async (now) => {
      const current = await this.subscriptions.findCurrent(workspace.id, now);
      if (current?.implicit) return this.changeCurrent(workspace, current, level, callerId, now, now);
      if (current) {
        throw new ApiException(
          ErrorCode.DuplicateEntity,
          `The workspace already has a current subscription (${current.level} since ${current.validFrom.toISOString()}); change its level with PUT`,
        );
      }
      await this.subscriptions.dropPending(workspace.id, now);
      await this.assertRoomForRow(workspace);
      return this.subscriptions.save({
        workspaceId: workspace.id,
        level,
        validFrom: now,
        validTo: null,
        changedBy: callerId,
      });
    });
  }

  /**
   * Changes the level at `effectiveAt` (now when omitted): the current row ends there and a row at
   * the new level starts there. Pending rows (an earlier scheduled change) are replaced; asking for
   * the level already current just cancels them, and a scheduled close with them. A scheduled close
   * otherwise stands: the new level holds until it, and a change from the close on is refused (400).
   * Answers the row that holds the level asked for.
   */
  change(
    workspace: WorkspaceEntity,
    level: SubscriptionLevel,
    callerId: string,
    effectiveAt?: Date,
  ): Promise<SubscriptionEntity> {
    this.refusePast(effectiveAt, 'validFrom');
    return this.locked(workspace, async (now) => {
      const current = await this.subscriptions.findCurrent(workspace.id, now);
      if (!current) throw new ApiException(ErrorCode.EntityNotFound, `${NO_ACTIVE}; start one with POST`);
      const at = effectiveAt && effectiveAt.getTime() > now.getTime() ? effectiveAt : now;
      return this.changeCurrent(workspace, current, level, callerId, at, now);
    });
  }

  /**
   * What change does once the workspace's lock is held and its current row read (see change).
   * Whatever it does, the current row is no longer implicit: a client has written the subscription.
   */
  private async changeCurrent(
    workspace: WorkspaceEntity,
    current: SubscriptionEntity,
    level: SubscriptionLevel,
    callerId: string,
    at: Date,
    now: Date,
  ): Promise<SubscriptionEntity> {
    // A scheduled close: the end of the row that starts last (the current one, or a pending change).
    const closesAt = (await this.subscriptions.findLatest(workspace.id))?.validTo ?? null;
    if (current.level !== level && closesAt && at.getTime() >= closesAt.getTime()) {
      throw new ApiException(
        ErrorCode.BadRequest,
        `Subscription ${current.id} is closed from ${closesAt.toISOString()}; a change from then on would come after its end (change to ${current.level} to cancel the close, or start a new subscription with POST once it has ended)`,
      );
    }
    await this.subscriptions.dropPending(workspace.id, now);
    current.implicit = false;
    if (current.level === level) {
      // Same level: nothing changes but the pending rows, and a scheduled close, are gone.
      current.validTo = null;
      return this.subscriptions.save(current);
    }
    if (current.validFrom.getTime() === at.getTime()) {
      // Same instant as the current row's start: the row has not held its level for any time, so it
      // simply takes the new one (until the scheduled close, if any).
      current.changedBy = callerId;
      current.level = level;
      current.validTo = closesAt;
      return this.subscriptions.save(current);
    }
    await this.assertRoomForRow(workspace);
    current.validTo = at;
    await this.subscriptions.save(current);
    return this.subscriptions.save({
      workspaceId: workspace.id,
      level,
      validFrom: at,
      validTo: closesAt,
      changedBy: callerId,
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
    return this.locked(workspace, async (now) => {
      const row = await this.subscriptions.findInWorkspace(subscriptionId, workspace.id);
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
      await this.subscriptions.dropPending(workspace.id, now);
      row.implicit = false;
      row.validTo = endAt && endAt.getTime() > now.getTime() ? endAt : now;
      return this.subscriptions.save(row);
    });
  }

  /**
   * Refuses a row beyond SUBSCRIPTION_CHANGES_PER_DAY started within 24 hours (429 with
   * Retry-After): every row is a line billing rates for its month and the history answers, so a
   * client changing levels in a loop would grow both without end. Under the workspace's lock, after
   * the pending rows a change replaces are gone (they no longer count).
   */
  private async assertRoomForRow(workspace: WorkspaceEntity): Promise<void> {
    const limit = this.config.env.SUBSCRIPTION_CHANGES_PER_DAY;
    const wait = await this.subscriptions.newRowWait(workspace.id, limit, CHANGES_WINDOW_SECONDS);
    if (wait === null) return;
    throw new ApiException(
      ErrorCode.ThresholdExceeded,
      `The subscription of this workspace changed ${limit} times in the last 24 hours; retry in ${wait} seconds`,
      { headers: { 'Retry-After': String(wait) } },
    );
  }

  /** The workspace's rows overlapping `[from, to)`, oldest first (what billing rates; in the context's transaction, if any). */
  overlapping(workspaceId: string, from: Date, to: Date): Promise<SubscriptionEntity[]> {
    return this.subscriptions.overlapping(workspaceId, from, to);
  }

  /**
   * When the workspace began to hold a level (its first row's start: its creation); after that, time
   * without a current row is a closed subscription, held to FREE (in the context's transaction, if any).
   */
  heldSince(workspaceId: string): Promise<Date | null> {
    return this.subscriptions.heldSince(workspaceId);
  }

  /** Ids of the workspaces holding a paid level (not FREE) at some time in `[from, to)`. */
  workspacesPayingIn(from: Date, to: Date): Promise<string[]> {
    return this.subscriptions.workspacesPayingIn(from, to);
  }

  /**
   * Gives a workspace without any row its FREE row, from the workspace's creation (nothing when it
   * has rows, even if none is current: a closed subscription stays closed). The row is committed in
   * a transaction of its own, so it is in place whatever the caller does next (a refused request,
   * a rating that fails).
   */
  async holdFreeFromCreation(workspaceId: string): Promise<void> {
    if (await this.subscriptions.existsFor(workspaceId)) return;
    await this.txHost.withNewTransaction(async () => {
      await this.subscriptions.lockWorkspace(workspaceId);
      if (await this.subscriptions.existsFor(workspaceId)) return;
      await this.subscriptions.insertFreeFromCreation(workspaceId, new Date());
    });
  }

  /**
   * Runs `work` in a transaction holding the workspace's subscription lock (`now` is read once the
   * lock is held), after giving a workspace without any row its FREE row (holdFreeFromCreation).
   */
  private async locked<T>(workspace: WorkspaceEntity, work: (now: Date) => Promise<T>): Promise<T> {
    await this.holdFreeFromCreation(workspace.id);
    return this.txHost.withTransaction(async () => {
      await this.subscriptions.lockWorkspace(workspace.id);
      return work(new Date());
    });
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
