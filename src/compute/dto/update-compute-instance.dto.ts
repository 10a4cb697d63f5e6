import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsString, Length, MinLength, NotContains } from 'class-validator';
import { IsOptionalNotNull } from '../../common/http/validation';

/** `UpdateComputeInstanceRequest` of the published API: give one or both fields. */
export class UpdateComputeInstanceDto {
  /** The compute type to resize to: its id (e.g. `dc-medium`) or its size (e.g. `medium`). */
  @ApiPropertyOptional({ minLength: 1, example: 'dc-medium' })
  @IsOptionalNotNull()
  @IsString()
  @MinLength(1, { message: 'instanceSize must not be empty' })
  instanceSize?: string;

  /** The new name of the instance. */
  @ApiPropertyOptional({ minLength: 1, maxLength: 512, example: 'reporting' })
  @IsOptionalNotNull()
  @IsString()
  @Length(1, 512, { message: 'instanceName must be 1 to 512 characters long' })
  // PostgreSQL text cannot hold NUL; refuse it here rather than fail the insert.
  @NotContains('\u0000', { message: 'instanceName must not contain NUL characters' })
  instanceName?: string;
}
