import { ApiProperty } from '@nestjs/swagger';
import { IsInt, IsString, Max, MaxLength, Min, NotContains } from 'class-validator';
import { IsOptionalNotNull } from '../../common/http/validation';

export class RotateCredentialsDto {
  /**
   * Hours until every credential that existed before this call stops working and is deleted
   * (0 to 720; 0 expires them at once).
   * @example 24
   */
  @ApiProperty({ type: 'integer', minimum: 0, maximum: 720 })
  @IsInt()
  @Min(0)
  @Max(720)
  delayOldSecretsExpirationHours!: number;

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
