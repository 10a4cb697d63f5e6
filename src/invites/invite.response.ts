import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { DeveloperKind } from '../developers/developer.entity';
import { WorkspaceResponse } from '../workspaces/workspace.response';
import { InviteState } from './invite.entity';

export class InviteSenderResponse {
  id!: string;
  email!: string;
  @ApiProperty({ enum: DeveloperKind, enumName: 'DeveloperKind' })
  kind!: DeveloperKind;
}

/** `DeveloperInvite` of the published API (with `code` only for programmatic invites, once). */
@ApiSchema({ name: 'DeveloperInvite' })
export class InviteResponse {
  id!: string;
  sender!: InviteSenderResponse;
  /** The invitee's address (lower-cased). */
  email!: string;
  workspace!: WorkspaceResponse;
  @ApiProperty({ enum: InviteState, enumName: 'InviteVerificationState' })
  verificationState!: InviteState;
  created!: Date;
  updated!: Date;
  /** Only in the response to a programmatic create. */
  @ApiPropertyOptional()
  code?: string;
}
