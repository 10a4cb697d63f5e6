import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedDeveloper } from '../auth/authenticated-developer';
import { CurrentDeveloper } from '../auth/current-developer.decorator';
import { AuthenticationReads, OwnProfile, type OwnWorkspaces } from '../auth/authentication-reads';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { DeveloperResponse } from './developer.response';
import { DeveloperProfiles } from './developer-profiles.service';

@ApiTags('developers')
@Controller('developers')
export class DevelopersController {
  constructor(private readonly profiles: DeveloperProfiles) {}

  @Get('me')
  @ApiOperation({ operationId: 'identifyDeveloper', summary: 'Identify the developer behind the presented token' })
  @ApiErrors(401)
  @ApiOkResponse({ type: DeveloperResponse })
  @AuthenticationReads('ownProfile')
  @Header('Content-Type', 'application/json; charset=utf-8')
  me(@CurrentDeveloper() caller: AuthenticatedDeveloper, @OwnProfile() own: OwnWorkspaces): string {
    return this.profiles.describeSelf(caller, own);
  }
}
