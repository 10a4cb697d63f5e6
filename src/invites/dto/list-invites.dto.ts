import { IsEnum } from 'class-validator';
import { IsOptionalNotNull } from '../../common/http/validation';
import { InviteState } from '../invite.entity';

export class ListInvitesQueryDto {
  /** Only invites in this state. */
  @IsOptionalNotNull()
  @IsEnum(InviteState, { message: `verificationState must be one of ${Object.values(InviteState).join(', ')}` })
  verificationState?: InviteState;
}
