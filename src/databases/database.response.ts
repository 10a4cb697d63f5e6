import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ALL_REGIONS, type Region } from '../config/regions';
import { WorkspaceResponse } from '../workspaces/workspace.response';
import { DatabaseStatus } from './database.entity';

/** `DatabaseParentResponse`: in a rename response, the database as it was before the rename. */
export class DatabaseParentResponse {
  /** The database's id (a rename keeps it). */
  id!: string;
  /** The name the database had before the rename. */
  @ApiProperty({ minLength: 1 })
  name!: string;
}

/** `GetDatabaseResponse` of the published API. */
export class DatabaseResponse {
  id!: string;
  @ApiProperty({ minLength: 1, example: 'my_spectacular_db' })
  name!: string;
  workspace!: WorkspaceResponse;
  @ApiProperty({ enum: DatabaseStatus, enumName: 'DatabaseStatus' })
  status!: DatabaseStatus;
  @ApiProperty({ enum: ALL_REGIONS, enumName: 'Region' })
  region!: Region;
  /** Whether the database can grow beyond one server (false on a single-server data plane). */
  expandable!: boolean;
  sharded!: boolean;
  created!: Date;
  /** When the database was deleted (queued for deletion); absent for a live database. */
  deleted?: Date;
  /** This service's URL for the database: `GET` answers this representation to workspace members. */
  @ApiProperty({ format: 'uri' })
  apiHost!: string;
  /** Connection URI `postgres://host:port/<physical name>`, once the database is READY. */
  @ApiPropertyOptional({ format: 'uri' })
  dbHost?: string;
  /** Only in the rename response: the database before the rename. */
  parent?: DatabaseParentResponse;
}

/** `Database` of the published API: the summary inside a credential. */
export class DatabaseSummaryResponse {
  id!: string;
  @ApiProperty({ minLength: 1 })
  name!: string;
  workspace!: WorkspaceResponse;
  @ApiProperty({ enum: DatabaseStatus, enumName: 'DatabaseStatus' })
  status!: DatabaseStatus;
  /** Stable integer id of the region. */
  @ApiProperty({ type: 'integer', format: 'int32' })
  regionId!: number;
  created!: Date;
}
