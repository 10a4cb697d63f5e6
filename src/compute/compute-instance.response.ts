import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ALL_REGIONS, type Region } from '../config/regions';
import { DatabaseResponse } from '../databases/database.response';
import { WorkspaceResponse } from '../workspaces/workspace.response';
import { ComputeInstanceStatus } from './compute-instance.entity';

/** `ComputeInstanceType` of the published API: a dedicated compute size. */
export class ComputeInstanceTypeResponse {
  /** The type's id; `instanceSize` accepts it (e.g. `dc-small`). */
  @ApiProperty({ example: 'dc-small' })
  id!: string;
  /** The size's name; `instanceSize` accepts it too (e.g. `small`). */
  @ApiProperty({ minLength: 1, example: 'small' })
  computeSize!: string;
  /** Memory of the size, for display (e.g. "4 GiB"). */
  @ApiProperty({ minLength: 1, example: '4 GiB' })
  memory!: string;
  /** Price in US dollars per hour the instance runs at this size. */
  @ApiProperty({ example: 0.1 })
  hourlyCost!: number;
}

/** `DedicatedComputeInstance` of the published API. */
export class DedicatedComputeInstanceResponse {
  instanceId!: string;
  workspace!: WorkspaceResponse;
  /** The database the instance serves. */
  database!: DatabaseResponse;
  @ApiProperty({ enum: ALL_REGIONS, enumName: 'Region' })
  region!: Region;
  instanceName!: string;
  /** The size the instance runs at now; until it is first provisioned, the size it is being provisioned at. */
  instanceType!: ComputeInstanceTypeResponse;
  /** The size the instance is asked to run at (differs from `instanceType` while a resize is pending). */
  desiredInstanceType!: ComputeInstanceTypeResponse;
  @ApiProperty({ enum: ComputeInstanceStatus, enumName: 'ComputeInstanceStatus' })
  status!: ComputeInstanceStatus;
  created!: Date;
  updated!: Date;
  /** When deletion was requested; absent for a live instance. */
  @ApiPropertyOptional()
  deleted?: Date;
}
