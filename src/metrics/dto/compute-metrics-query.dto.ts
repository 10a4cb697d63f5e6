import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptionalNotNull } from '../../common/http/validation';
import { IsIsoDateTime } from '../../common/http/iso-date-time';

export class ComputeMetricsQueryDto {
  /** Start of the window (ISO 8601 date-time with a time zone); default: 24 hours before `end`. */
  @ApiPropertyOptional({ format: 'date-time', example: '2025-03-01T00:00:00Z' })
  @IsOptionalNotNull()
  @IsIsoDateTime()
  start?: string;

  /** End of the window (ISO 8601 date-time with a time zone); default: now. */
  @ApiPropertyOptional({ format: 'date-time', example: '2025-03-02T00:00:00Z' })
  @IsOptionalNotNull()
  @IsIsoDateTime()
  end?: string;
}
