import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptionalNotNull } from '../../common/http/validation';
import { IsIsoDateTime } from '../../common/http/iso-date-time';

export class CloseSubscriptionQueryDto {
  /** When the subscription ends (ISO 8601 date-time with a time zone, not in the past); now when omitted. */
  @ApiPropertyOptional({ format: 'date-time', example: '2025-04-01T00:00:00Z' })
  @IsOptionalNotNull()
  @IsIsoDateTime()
  validTo?: string;
}
