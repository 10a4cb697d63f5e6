import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn } from 'class-validator';
import { IsOptionalNotNull } from '../../common/http/validation';
import { CREATABLE_REGIONS, type Region } from '../../config/regions';

/** `UnauthenticatedProvisionDatabaseRequest`. */
export class ProvisionDatabaseDto {
  @ApiPropertyOptional({ enum: CREATABLE_REGIONS, default: CREATABLE_REGIONS[0] })
  @IsOptionalNotNull()
  @IsIn(CREATABLE_REGIONS, { message: `region must be one of ${CREATABLE_REGIONS.join(', ')}` })
  region?: Region;
}
