import { IsOptional, IsString, MaxLength } from 'class-validator';

/** The join page's form (application/x-www-form-urlencoded). */
export class JoinFormDto {
  @IsString()
  @MaxLength(200)
  code!: string;

  @IsString()
  @MaxLength(1024)
  password!: string;

  /** From the e-mailed link: needed to create an account (signing in needs only the password). */
  @IsOptional()
  @IsString()
  @MaxLength(200)
  proof?: string;
}
