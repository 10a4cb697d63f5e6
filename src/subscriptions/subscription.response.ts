import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { ALL_SUBSCRIPTION_LEVELS } from './subscription-level';
import type { SubscriptionEntity } from './subscription.entity';

/** `WorkspaceSubscriptionDto` of the published API: one subscription row. */
export class WorkspaceSubscriptionDto {
  /** The workspace's slug. */
  @ApiProperty({ example: 'acme-prod' })
  workspace!: string;
  @ApiProperty({ enum: ALL_SUBSCRIPTION_LEVELS, enumName: 'SubscriptionLevel' })
  level!: string;
  /** When the level takes (or took) effect. */
  validFrom!: Date;
  /** When the level ends (absent while open-ended; set when a change or close is scheduled). */
  @ApiPropertyOptional()
  validTo?: Date;
  /** The id of the subscription row. */
  @ApiProperty({ format: 'uuid' })
  subscriptionId!: string;

  static from(row: SubscriptionEntity, workspace: Pick<WorkspaceEntity, 'slug'>): WorkspaceSubscriptionDto {
    return {
      workspace: workspace.slug,
      level: row.level,
      validFrom: row.validFrom,
      validTo: row.validTo ?? undefined,
      subscriptionId: row.id,
    };
  }
}
