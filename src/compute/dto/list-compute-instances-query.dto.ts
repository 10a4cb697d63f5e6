import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptionalNotNull } from '../../common/http/validation';
import { IsIsoDateTime } from '../../common/http/iso-date-time';

/** The time window of `GET …/compute`: instances active at some moment within it. */
export class ListComputeInstancesQueryDto {
  /** Start of the window (ISO 8601 date-time with a time zone): instances terminated before it are left out. */
  @ApiPropertyOptional({ format: 'date-time' })
  @IsOptionalNotNull()
  @IsIsoDateTime()
  start?: string;

  /** End of the window (ISO 8601 date-time with a time zone): instances created at or after it are left out. */
  @ApiPropertyOptional({ format: 'date-time' })
  @IsOptionalNotNull()
  @IsIsoDateTime()
  end?: string;
}
