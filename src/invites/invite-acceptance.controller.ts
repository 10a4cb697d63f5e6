import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedDeveloper } from '../auth/authenticated-developer';
import { CurrentDeveloper } from '../auth/current-developer.decorator';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { WorkspaceResponse } from '../workspaces/workspace.response';
import { AcceptInviteDto } from './dto/accept-invite.dto';
import { InvitesService } from './invites.service';
import { RequiredScope } from '../auth/required-scope';

@ApiTags('invites')
@Controller('invites')
@RequiredScope('workspaces')
export class InviteAcceptanceController {
  constructor(private readonly invites: InvitesService) {}

  @Post('accept')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'acceptDeveloperInvite',
    summary: "Join a workspace with an invite code; the caller's e-mail must be the invitee's",
  })
  @ApiErrors(400, 401, 403, 404, 415)
  accept(
    @CurrentDeveloper() caller: AuthenticatedDeveloper,
    @Body() body: AcceptInviteDto,
  ): Promise<WorkspaceResponse> {
    return this.invites.accept(caller, body.code);
  }
}
