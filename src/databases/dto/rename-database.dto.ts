import { ApiProperty } from '@nestjs/swagger';
import { IsDatabaseName } from '../database-name';

export class RenameDatabaseDto {
  /** The new name of the database, subject to the same rules as at creation. */
  @ApiProperty({ minLength: 1, maxLength: 63, pattern: '^[A-Za-z_][A-Za-z0-9_]*$', example: 'my_spectacular_db' })
  @IsDatabaseName()
  name!: string;
}
