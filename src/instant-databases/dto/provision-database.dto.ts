import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';
import { CREATABLE_REGIONS, type Region } from '../../config/regions';

/** `UnauthenticatedProvisionDatabaseRequest`. */
export class ProvisionDatabaseDto {
  @ApiPropertyOptional({ enum: CREATABLE_REGIONS, default: CREATABLE_REGIONS[0] })
  @IsOptional()
  @IsIn(CREATABLE_REGIONS, { message: `region must be one of ${CREATABLE_REGIONS.join(', ')}` })
  region?: Region;
}
