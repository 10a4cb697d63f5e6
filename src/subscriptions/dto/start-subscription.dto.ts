import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn } from 'class-validator';
import { ALL_SUBSCRIPTION_LEVELS, LEVEL_MESSAGE, normalizeLevel, SubscriptionLevel } from '../subscription-level';

/** `WorkspaceSubscriptionRequest` of the published API: starts a subscription at a level. */
export class WorkspaceSubscriptionRequest {
  /** The subscription level (case-insensitive). */
  @ApiProperty({ enum: ALL_SUBSCRIPTION_LEVELS, enumName: 'SubscriptionLevel', example: 'FREE' })
  @Transform(normalizeLevel)
  @IsIn(ALL_SUBSCRIPTION_LEVELS, { message: LEVEL_MESSAGE })
  level!: SubscriptionLevel;
}
