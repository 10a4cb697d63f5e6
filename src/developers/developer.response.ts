import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { DeveloperKind } from './developer.entity';
import { WorkspaceResponse } from '../workspaces/workspace.response';

/** `Developer` of the published API. */
@ApiSchema({ name: 'Developer' })
export class DeveloperResponse {
  id!: string;
  email!: string;
  @ApiProperty({ enum: DeveloperKind, enumName: 'DeveloperKind' })
  kind!: DeveloperKind;
  /** Workspaces the developer may access (in a workspace listing: only those the caller shares). */
  @ApiPropertyOptional({ type: [WorkspaceResponse], uniqueItems: true })
  workspaces!: WorkspaceResponse[];
  /** Ids of the databases the developer may access. */
  @ApiPropertyOptional({ type: [String], uniqueItems: true })
  databases!: string[];
}
