import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn } from 'class-validator';
import { IsOptionalNotNull } from '../../common/http/validation';
import { CREATABLE_REGIONS, type Region } from '../../config/regions';
import { IsDatabaseName } from '../database-name';

export class CreateDatabaseDto {
  /**
   * The name of the database: fewer than 64 characters, unique within the workspace; letters,
   * digits and underscores, beginning with a letter or an underscore.
   */
  @ApiProperty({ minLength: 1, maxLength: 63, pattern: '^[A-Za-z_][A-Za-z0-9_]*$', example: 'my_spectacular_db' })
  @IsDatabaseName()
  databaseName!: string;

  /** The region where the database is hosted. */
  @ApiProperty({ enum: CREATABLE_REGIONS, example: 'AWS_US_WEST_2' })
  @IsIn(CREATABLE_REGIONS, { message: `region must be one of ${CREATABLE_REGIONS.join(', ')}` })
  region!: Region;

  /** True for a sharded database (needs a data plane that offers sharding), false for regular PostgreSQL. */
  @ApiPropertyOptional({ default: false })
  @IsOptionalNotNull()
  @IsBoolean()
  sharded?: boolean;
}
