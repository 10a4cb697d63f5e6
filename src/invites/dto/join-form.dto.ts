import { IsString, MaxLength } from 'class-validator';
import { IsOptionalNotNull } from '../../common/http/validation';

/** The join page's form (application/x-www-form-urlencoded). */
export class JoinFormDto {
  @IsString()
  @MaxLength(200)
  code!: string;

  @IsString()
  @MaxLength(1024)
  password!: string;

  /** From the e-mailed link: needed to create an account (signing in needs only the password). */
  @IsOptionalNotNull()
  @IsString()
  @MaxLength(200)
  proof?: string;
}
