import { Controller, Get, Param } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedDeveloper } from '../auth/authenticated-developer';
import { CurrentDeveloper } from '../auth/current-developer.decorator';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { DatabaseResponse } from './database.response';
import { DatabasesService } from './databases.service';
import { RequiredScope } from '../auth/required-scope';

/** The database's `apiHost`: the same representation, addressed by id, for members of its workspace. */
@ApiTags('databases')
@Controller('databases')
@RequiredScope('databases')
export class DatabaseByIdController {
  constructor(private readonly databases: DatabasesService) {}

  @Get(':databaseId')
  @ApiOperation({
    operationId: 'getDatabaseById',
    summary: "Get a database by id (its apiHost); unknown ids and other workspaces' databases are both 404",
  })
  @ApiResponse({ status: 200, type: DatabaseResponse })
  @ApiErrors(401, 403, 404)
  get(@CurrentDeveloper() caller: AuthenticatedDeveloper, @Param('databaseId') id: string): Promise<DatabaseResponse> {
    return this.databases.getVisible(id, caller.id);
  }
}
