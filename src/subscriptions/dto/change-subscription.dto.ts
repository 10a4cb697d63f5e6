import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn } from 'class-validator';
import { IsOptionalNotNull } from '../../common/http/validation';
import { IsIsoDateTime } from '../../common/http/iso-date-time';
import { ALL_SUBSCRIPTION_LEVELS, LEVEL_MESSAGE, normalizeLevel, SubscriptionLevel } from '../subscription-level';

/** Changes the level of the current subscription, now or at a future moment. */
export class ChangeSubscriptionRequest {
  /** The new subscription level (case-insensitive). */
  @ApiProperty({ enum: ALL_SUBSCRIPTION_LEVELS, enumName: 'SubscriptionLevel', example: 'PRO' })
  @Transform(normalizeLevel)
  @IsIn(ALL_SUBSCRIPTION_LEVELS, { message: LEVEL_MESSAGE })
  level!: SubscriptionLevel;

  /**
   * When the change takes effect (ISO 8601 date-time with a time zone, not in the past); now when
   * omitted. A later change made before this moment replaces this one.
   */
  @ApiPropertyOptional({ format: 'date-time', example: '2025-04-01T00:00:00Z' })
  @IsOptionalNotNull()
  @IsIsoDateTime()
  validFrom?: string;
}
