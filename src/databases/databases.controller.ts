import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { AuthenticationReads } from '../auth/authentication-reads';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { AppConfig } from '../config/app-config';
import { CurrentWorkspace, WorkspaceScoped } from '../workspaces/workspace-access.guard';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import type { DatabaseEntity } from './database.entity';
import { DATABASE_NAME_PARAM } from './database-name';
import { DatabaseResponse } from './database.response';
import { DatabasesService } from './databases.service';
import { PrefetchedDatabase } from './prefetched-database.decorator';
import { CreateDatabaseDto } from './dto/create-database.dto';
import { DEFAULT_DATABASE_PAGE, ListDatabasesQueryDto } from './dto/list-databases-query.dto';
import { RenameDatabaseDto } from './dto/rename-database.dto';
import { RequiredScope } from '../auth/required-scope';

@ApiTags('databases')
@Controller('workspaces/:workspaceSlug/databases')
@RequiredScope('databases')
@WorkspaceScoped()
export class DatabasesController {
  constructor(
    private readonly databases: DatabasesService,
    private readonly config: AppConfig,
  ) {}

  @Post()
  @HttpCode(201)
  @ApiOperation({
    operationId: 'createDatabase',
    summary: 'Create a database',
    description:
      "Records the database and builds it on the region's data plane in the background (status REQUESTED, then BUILT, then READY); when the region's warm pool has a pre-built database, it is READY at once. Beyond the plan's number of databases, 403 threshold_exceeded; databases queued for deletion keep their place on their server until they are finalized, so a create also counts them, up to as many again as the plan allows.",
  })
  @ApiResponse({ status: 201, type: DatabaseResponse })
  @ApiErrors(400, 409, 415)
  create(@CurrentWorkspace() workspace: WorkspaceEntity, @Body() body: CreateDatabaseDto): Promise<DatabaseResponse> {
    return this.databases.create(workspace, body);
  }

  @Get()
  @ApiOperation({
    operationId: 'listDatabases',
    summary: 'List the databases of the workspace that are not deleted, oldest first',
    description: `Pages with \`limit\` (default ${DEFAULT_DATABASE_PAGE}, at most 1000) and \`cursor\`; when more remain, the \`Link\` header (RFC 8288) carries the URL of the next page with rel="next". The body is always a bare array.`,
  })
  @ApiResponse({
    status: 200,
    type: [DatabaseResponse],
    headers: {
      Link: { description: 'When more remain: `<url of the next page>; rel="next"`', schema: { type: 'string' } },
    },
  })
  @ApiErrors(400)
  async list(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Query() query: ListDatabasesQueryDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<DatabaseResponse[]> {
    const limit = query.limit ?? DEFAULT_DATABASE_PAGE;
    const page = await this.databases.list(workspace, limit, query.cursor);
    if (page.next) {
      const next = new URL(`${this.config.publicUrl}/workspaces/${encodeURIComponent(workspace.slug)}/databases`);
      next.searchParams.set('limit', String(limit));
      next.searchParams.set('cursor', page.next);
      res.setHeader('Link', `<${next.toString()}>; rel="next"`);
    }
    return page.items;
  }

  @Get(':databaseName')
  @ApiParam(DATABASE_NAME_PARAM)
  @ApiOperation({
    operationId: 'getDatabase',
    summary: 'Get a database by name (also while it is queued for deletion, with `deleted` set)',
  })
  @ApiResponse({ status: 200, type: DatabaseResponse })
  @ApiErrors(404)
  @AuthenticationReads('routeDatabase')
  get(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseName') name: string,
    @PrefetchedDatabase() prefetched: DatabaseEntity | null | undefined,
  ): Promise<DatabaseResponse> {
    return this.databases.get(workspace, name, prefetched);
  }

  @Put(':databaseName')
  @ApiParam(DATABASE_NAME_PARAM)
  @ApiOperation({
    operationId: 'renameDatabase',
    summary: 'Rename a database',
    description:
      'The physical database and its open connections are untouched. `parent` holds the database as it was before the rename: its id and its previous name.',
  })
  @ApiResponse({ status: 200, type: DatabaseResponse })
  @ApiErrors(400, 404, 409, 415)
  rename(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseName') name: string,
    @Body() body: RenameDatabaseDto,
  ): Promise<DatabaseResponse> {
    return this.databases.rename(workspace, name, body.name);
  }

  @Delete(':databaseName')
  @ApiParam(DATABASE_NAME_PARAM)
  @ApiOperation({
    operationId: 'deleteDatabase',
    summary: 'Delete a database',
    description:
      'Marks the database deleted and queues it for deletion: it leaves the list and its name is free at once, but it keeps accepting connections and operations until the deletion is finalized after the grace period. Its compute cost accrues until the grace period ends, however late the finalization comes.',
  })
  @ApiResponse({ status: 200, type: DatabaseResponse })
  @ApiErrors(404)
  delete(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('databaseName') name: string,
  ): Promise<DatabaseResponse> {
    return this.databases.delete(workspace, name);
  }
}
