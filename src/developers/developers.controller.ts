import { Controller, Get, Res } from '@nestjs/common';
import type { Response } from 'express';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedDeveloper } from '../auth/authenticated-developer';
import { CurrentDeveloper } from '../auth/current-developer.decorator';
import { AuthenticationReads, OwnProfile, type OwnWorkspaces } from '../auth/authentication-reads';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { DeveloperResponse } from './developer.response';
import { DeveloperProfiles } from './developer-profiles.service';
import { RequiredScope } from '../auth/required-scope';

@ApiTags('developers')
@Controller('developers')
@RequiredScope('workspaces')
export class DevelopersController {
  constructor(private readonly profiles: DeveloperProfiles) {}

  @Get('me')
  @ApiOperation({ operationId: 'identifyDeveloper', summary: 'Identify the developer behind the presented token' })
  @ApiErrors(401, 403)
  @ApiOkResponse({ type: DeveloperResponse })
  @AuthenticationReads('ownProfile')
  me(@CurrentDeveloper() caller: AuthenticatedDeveloper, @OwnProfile() own: OwnWorkspaces, @Res() res: Response): void {
    // Already the JSON document's bytes (see describeSelf): sent as they are.
    res.type('application/json; charset=utf-8').send(this.profiles.describeSelf(caller, own));
  }
}
