import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { IsIsoDateTime } from '../../common/http/iso-date-time';

/** The time window of `GET …/compute`: instances active at some moment within it. */
export class ListComputeInstancesQueryDto {
  /** Start of the window (ISO 8601 date-time with a time zone): instances terminated before it are left out. */
  @ApiPropertyOptional({ format: 'date-time' })
  @IsOptional()
  @IsIsoDateTime()
  start?: string;

  /** End of the window (ISO 8601 date-time with a time zone): instances created at or after it are left out. */
  @ApiPropertyOptional({ format: 'date-time' })
  @IsOptional()
  @IsIsoDateTime()
  end?: string;
}
