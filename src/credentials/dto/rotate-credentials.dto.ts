import { ApiProperty } from '@nestjs/swagger';
import { IsInt, IsString, Max, MaxLength, Min, NotContains } from 'class-validator';
import { IsOptionalNotNull } from '../../common/http/validation';

export const DEFAULT_ROTATION_DELAY_HOURS = 24;

export class RotateCredentialsDto {
  /**
   * Hours until every credential that existed before this call stops working and is deleted
   * (0 to 720; 0 expires them at once). Optional, as in the published schema: a rotation that names
   * no delay is taken as a routine one and gives the earlier credentials a day to be replaced (a
   * leaked credential is rotated with 0).
   * @example 24
   */
  @ApiProperty({ type: 'integer', minimum: 0, maximum: 720, default: DEFAULT_ROTATION_DELAY_HOURS, required: false })
  @IsInt()
  @Min(0)
  @Max(720)
  delayOldSecretsExpirationHours: number = DEFAULT_ROTATION_DELAY_HOURS;

  /**
   * Why the credentials are rotated; recorded with the rotation.
   * @example "quarterly rotation"
   */
  @IsOptionalNotNull()
  @IsString()
  @MaxLength(1000)
  // PostgreSQL text cannot hold NUL: refuse it before a role is made for a rotation that cannot be recorded.
  @NotContains('\u0000', { message: 'reason must not contain NUL characters' })
  reason?: string;
}
