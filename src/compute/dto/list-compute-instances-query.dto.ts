import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsISO8601, IsOptional } from 'class-validator';

const MESSAGE = 'must be an ISO 8601 date-time, e.g. 2025-01-31T12:00:00Z';

/** The time window of `GET …/compute`: instances active at some moment within it. */
export class ListComputeInstancesQueryDto {
  /** Start of the window (ISO 8601 date-time): instances terminated before it are left out. */
  @ApiPropertyOptional({ format: 'date-time' })
  @IsOptional()
  @IsISO8601({ strict: true }, { message: `start ${MESSAGE}` })
  start?: string;

  /** End of the window (ISO 8601 date-time): instances created at or after it are left out. */
  @ApiPropertyOptional({ format: 'date-time' })
  @IsOptional()
  @IsISO8601({ strict: true }, { message: `end ${MESSAGE}` })
  end?: string;
}
