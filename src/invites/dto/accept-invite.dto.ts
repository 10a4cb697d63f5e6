import { IsString, MaxLength, MinLength } from 'class-validator';

export class AcceptInviteDto {
  /** The invite code from the join link (or from a programmatic invite). */
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  code!: string;
}
