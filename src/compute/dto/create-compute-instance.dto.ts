import { ApiProperty } from '@nestjs/swagger';
import { IsString, Length, MinLength, NotContains } from 'class-validator';

/** `CreateComputeInstanceRequest` of the published API. */
export class CreateComputeInstanceDto {
  /**
   * The compute type: its id (e.g. `dc-small`) or its size (e.g. `small`), as listed by
   * `GET /workspaces/{workspaceSlug}/compute-types`.
   */
  @ApiProperty({ minLength: 1, example: 'dc-small' })
  @IsString()
  @MinLength(1, { message: 'instanceSize must not be empty' })
  instanceSize!: string;

  /** A name for the instance (names need not be unique; `instanceId` identifies it). */
  @ApiProperty({ minLength: 1, maxLength: 512, example: 'reporting' })
  @IsString()
  @Length(1, 512, { message: 'instanceName must be 1 to 512 characters long' })
  // PostgreSQL text cannot hold NUL; refuse it here rather than fail the insert.
  @NotContains('\u0000', { message: 'instanceName must not contain NUL characters' })
  instanceName!: string;
}
