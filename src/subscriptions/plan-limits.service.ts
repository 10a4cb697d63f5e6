import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { AppConfig } from '../config/app-config';
import type { PlanLimit } from '../config/environment';
import { SubscriptionLevel } from './subscription-level';

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
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {}

  async planOf(workspaceId: string, manager: EntityManager = this.dataSource.manager): Promise<Plan> {
    const [row] = await manager.query<{ level: SubscriptionLevel }[]>(
      `SELECT level FROM subscriptions
        WHERE workspace_id = $1 AND valid_from <= now() AND (valid_to IS NULL OR valid_to > now())
        ORDER BY valid_from DESC LIMIT 1`,
      [workspaceId],
    );
    return this.plan(row?.level ?? SubscriptionLevel.Free);
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
   * now; the caller runs both in the transaction that adds the resource, holding a lock that
   * serializes such additions, so parallel creates never pass the limit together.
   */
  async assertRoomFor(
    manager: EntityManager,
    workspaceId: string,
    resource: 'databases' | 'credentials',
    count: () => Promise<number>,
  ): Promise<void> {
    const plan = await this.planOf(workspaceId, manager);
    const limit = resource === 'databases' ? plan.maxDatabases : plan.maxCredentialsPerDatabase;
    if (limit === 'unlimited' || (await count()) < limit) return;
    const what = resource === 'databases' ? 'databases' : 'credentials per database';
    throw new ApiException(ErrorCode.ThresholdExceeded, `The ${plan.level} plan allows ${limit} ${what}`, {
      status: 403,
    });
  }

  async assertDedicatedCompute(workspaceId: string): Promise<void> {
    const plan = await this.planOf(workspaceId);
    if (!plan.dedicatedCompute) {
      throw new ApiException(
        ErrorCode.FeatureIneligible,
        `The ${plan.level} plan does not include dedicated compute; change the subscription level to use it`,
        { status: 403 },
      );
    }
  }
}
