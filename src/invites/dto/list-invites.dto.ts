import { IsEnum, IsOptional } from 'class-validator';
import { InviteState } from '../invite.entity';

export class ListInvitesQueryDto {
  /** Only invites in this state. */
  @IsOptional()
  @IsEnum(InviteState, { message: `verificationState must be one of ${Object.values(InviteState).join(', ')}` })
  verificationState?: InviteState;
}
