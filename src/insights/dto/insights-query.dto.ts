import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn } from 'class-validator';
import { IsOptionalNotNull } from '../../common/http/validation';
import { IsIsoDateTime } from '../../common/http/iso-date-time';

export const GRANULARITIES = ['1m', '5m', '1h', '1d'] as const;
export type Granularity = (typeof GRANULARITIES)[number];

export class InsightsQueryDto {
  /** Minute-aligned start of the window (ISO 8601 with a time zone); default: 24 hours before `end`. */
  @ApiPropertyOptional({ format: 'date-time', example: '2025-03-01T00:00:00Z' })
  @IsOptionalNotNull()
  @IsIsoDateTime()
  start?: string;

  /** Minute-aligned end of the window, exclusive (ISO 8601 with a time zone); default: the next minute. */
  @ApiPropertyOptional({ format: 'date-time', example: '2025-03-02T00:00:00Z' })
  @IsOptionalNotNull()
  @IsIsoDateTime()
  end?: string;

  /** Bucket granularity: 1m, 5m, 1h or 1d; default 1h. */
  @ApiPropertyOptional({ enum: GRANULARITIES, example: '1h' })
  @IsOptionalNotNull()
  @IsIn(GRANULARITIES, { message: 'granularity must be one of 1m, 5m, 1h, 1d' })
  granularity?: Granularity;
}
