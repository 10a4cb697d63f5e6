import { Injectable } from '@nestjs/common';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { AppConfig } from '../config/app-config';
import type { PlanLimit } from '../config/environment';
import type { PlacedDatabases } from '../databases/databases.repository';
import { SubscriptionLevel } from './subscription-level';
import { SubscriptionsService } from './subscriptions.service';

export interface Plan {
  level: SubscriptionLevel;
  maxDatabases: PlanLimit;
  maxCredentialsPerDatabase: PlanLimit;
  dedicatedCompute: boolean;
}

/**
 * What each subscription level allows (from the environment), checked where resources are made.
 * The level is the one current when the request is served: moving to PRO lifts the limits at
 * once; moving down deletes nothing, it only refuses new resources until the workspace is under
 * the limit again. A workspace whose subscription was closed is held to FREE.
 */
@Injectable()
export class PlanLimits {
  constructor(
    private readonly subscriptions: SubscriptionsService,
    private readonly config: AppConfig,
  ) {}

  /** The plan of the level held now (read in the transaction the context carries, if any). */
  async planOf(workspaceId: string): Promise<Plan> {
    return this.plan((await this.subscriptions.levelNow(workspaceId)) ?? SubscriptionLevel.Free);
  }

  /** Whether some level limits `resource` (with none, no count is ever needed). */
  limits(resource: 'databases' | 'credentials'): boolean {
    return Object.values(SubscriptionLevel).some((level) => {
      const plan = this.plan(level);
      return (resource === 'databases' ? plan.maxDatabases : plan.maxCredentialsPerDatabase) !== 'unlimited';
    });
  }

  plan(level: SubscriptionLevel): Plan {
    const env = this.config.env;
    switch (level) {
      case SubscriptionLevel.Free:
        return {
          level,
          maxDatabases: env.PLAN_FREE_MAX_DATABASES,
          maxCredentialsPerDatabase: env.PLAN_FREE_MAX_CREDENTIALS_PER_DATABASE,
          dedicatedCompute: env.PLAN_FREE_DEDICATED_COMPUTE,
        };
      case SubscriptionLevel.Pro:
        return {
          level,
          maxDatabases: env.PLAN_PRO_MAX_DATABASES,
          maxCredentialsPerDatabase: env.PLAN_PRO_MAX_CREDENTIALS_PER_DATABASE,
          dedicatedCompute: env.PLAN_PRO_DEDICATED_COMPUTE,
        };
    }
  }

  /**
   * Refuses one more `resource` than the workspace's plan allows. `count` tells how many there are
   * now; both run in the transaction that adds the resource, which the context carries, the caller
   * holding a lock that serializes such additions, so parallel creates never pass the limit together.
   */
  async assertRoomFor(
    workspaceId: string,
    resource: 'databases' | 'credentials',
    count: () => Promise<number>,
  ): Promise<void> {
    const plan = await this.planOf(workspaceId);
    const limit = resource === 'databases' ? plan.maxDatabases : plan.maxCredentialsPerDatabase;
    if (limit === 'unlimited' || (await count()) < limit) return;
    this.refuse(plan, limit, resource);
  }

  private refuse(plan: Plan, limit: number, resource: 'databases' | 'credentials'): never {
    const what = resource === 'databases' ? 'databases' : 'credentials per database';
    throw new ApiException(ErrorCode.ThresholdExceeded, `The ${plan.level} plan allows ${limit} ${what}`, {
      status: 403,
    });
  }

  /**
   * Refuses a new database beyond the plan (as assertRoomFor), or beyond twice the plan's limit
   * counting those queued for deletion: they keep their place on their server until they are
   * finalized (the grace period, a day by default), so creating and deleting in a loop would
   * otherwise fill a region for a day. Deleting always frees the plan's places at once: a workspace
   * at its limit can delete everything and create as many again, and only a second round within the
   * grace period waits for the first to be finalized. `count` runs under the plan's lock, as there.
   */
  async assertRoomForDatabase(workspaceId: string, count: () => Promise<PlacedDatabases>): Promise<void> {
    const plan = await this.planOf(workspaceId);
    const limit = plan.maxDatabases;
    if (limit === 'unlimited') return;
    const { live, queued, firstDueAt } = await count();
    if (live >= limit) this.refuse(plan, limit, 'databases');
    if (live + queued < 2 * limit) return;
    // queued > limit >= 1 here, so there is a first due time. One already past is a finalization
    // running late (the reconciler finalizes it at its next pass that reaches its server).
    const due = firstDueAt!;
    const when =
      due.getTime() > Date.now()
        ? `is finalized at ${due.toISOString()}`
        : `was due to be finalized at ${due.toISOString()} and is finalized at the next reconciler pass that reaches its server`;
    throw new ApiException(
      ErrorCode.ThresholdExceeded,
      `The ${plan.level} plan allows ${limit} databases, and as many again queued for deletion (they keep their place until they are finalized); the first of the ${queued} queued ${when}`,
      { status: 403 },
    );
  }

  /**
   * Refuses a rotation that would leave more of a database's credentials working besides the one it
   * issues than the plan allows credentials per database: with a delay, each rotation adds a working
   * role for that long. `stillWorking` tells how many would be; like assertRoomFor it runs where the
   * caller holds the turn of the rotations it counts.
   */
  async assertRotationWithinPlan(workspaceId: string, stillWorking: () => Promise<number>): Promise<void> {
    const plan = await this.planOf(workspaceId);
    const limit = plan.maxCredentialsPerDatabase;
    if (limit === 'unlimited') return;
    const n = await stillWorking();
    if (n <= limit) return;
    throw new ApiException(
      ErrorCode.ThresholdExceeded,
      `The ${plan.level} plan allows ${limit} credentials per database; this rotation would keep ${n} others working besides the one it issues (rotate the credentials with delay 0, delete some, or wait for those rotated earlier to expire)`,
      { status: 403 },
    );
  }

  /**
   * Refuses (403 feature_ineligible) adding dedicated compute (`add`), or making an instance bigger
   * (`grow`), on a level without it. A workspace that changed to such a level keeps its instances,
   * which it may still resize down, rename or delete.
   */
  async assertDedicatedCompute(workspaceId: string, what: 'add' | 'grow' = 'add'): Promise<void> {
    const plan = await this.planOf(workspaceId);
    if (!plan.dedicatedCompute) {
      throw new ApiException(
        ErrorCode.FeatureIneligible,
        `The ${plan.level} plan does not include dedicated compute; change the subscription level to use it` +
          (what === 'grow' ? ' (an instance may still be resized down, renamed or deleted)' : ''),
        { status: 403 },
      );
    }
  }
}
