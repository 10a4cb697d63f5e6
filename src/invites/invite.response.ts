import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { DeveloperResponse } from '../developers/developer.response';
import { WorkspaceResponse } from '../workspaces/workspace.response';
import { InviteState } from './invite.entity';

/** `DeveloperInvite` of the published API (with `code` only for programmatic invites, once). */
@ApiSchema({ name: 'DeveloperInvite' })
export class InviteResponse {
  id!: string;
  /**
   * Who sent the invite, as the viewer may see them (as in the workspace's developer list): only the
   * workspaces, and their databases, the viewer shares with the sender.
   */
  sender!: DeveloperResponse;
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
