import { IsBoolean, IsEmail, MaxLength } from 'class-validator';
import { IsOptionalNotNull } from '../../common/http/validation';
import { EMAIL_ADDRESS_MESSAGE, EMAIL_ADDRESS_RULE } from '../../developers/email-address';

/** Parameters for inviting a developer to a workspace. */
export class CreateInviteDto {
  /**
   * The invitee's e-mail address.
   * @example "jane@example.com"
   */
  @IsEmail(EMAIL_ADDRESS_RULE, { message: `email ${EMAIL_ADDRESS_MESSAGE}` })
  @MaxLength(320)
  email!: string;

  /** If true, the response also carries the invite code (for programmatic acceptance). */
  @IsOptionalNotNull()
  @IsBoolean()
  programmatic?: boolean;
}
