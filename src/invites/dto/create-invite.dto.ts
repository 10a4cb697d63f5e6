import { IsBoolean, IsEmail, MaxLength } from 'class-validator';
import { IsOptionalNotNull } from '../../common/http/validation';

/** Parameters for inviting a developer to a workspace. */
export class CreateInviteDto {
  /**
   * The invitee's e-mail address.
   * @example "jane@example.com"
   */
  @IsEmail({}, { message: 'email must be a valid e-mail address' })
  @MaxLength(320)
  email!: string;

  /** If true, the response also carries the invite code (for programmatic acceptance). */
  @IsOptionalNotNull()
  @IsBoolean()
  programmatic?: boolean;
}
