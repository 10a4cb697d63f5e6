import { ApiExtraModels, ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';

/**
 * `InstancePeriodComputeUsage` of the published API. For an instance: its usage within the window,
 * with one entry in `spans` per size it ran at; for a span: one stretch at one size (no `spans`).
 */
export class InstancePeriodComputeUsage {
  /** vCPUs × hours within the window (6 decimals). */
  @ApiProperty({ format: 'double' })
  totalVCPUHours!: number;
  /** Compute size (the latest one within the window, for an instance). */
  @ApiProperty({ example: 'small' })
  size!: string;
  /** Start of the usage, clipped to the window. */
  start!: Date;
  /** End of the usage, clipped to the window (the time of the request for an instance still running). */
  end!: Date;
  /** The stretches at one size, oldest first (instances only). */
  @ApiPropertyOptional({ type: () => [InstancePeriodComputeUsage] })
  spans?: InstancePeriodComputeUsage[];
}

/** `DatabaseComputeUsage` of the published API: the usage of one database's dedicated instances. */
@ApiExtraModels(InstancePeriodComputeUsage)
export class DatabaseComputeUsage {
  /** Usage per instance id. */
  @ApiProperty({ type: 'object', additionalProperties: { $ref: getSchemaPath(InstancePeriodComputeUsage) } })
  usageByInstance!: Record<string, InstancePeriodComputeUsage>;
  @ApiProperty({ format: 'double' })
  totalVCPUHours!: number;
  /** Earliest start among the database's instances (clipped to the window). */
  start!: Date;
  /** Latest end among the database's instances (clipped to the window). */
  end!: Date;
}

/** `TimeSeriesPoint` of the published API. */
export class TimeSeriesPoint {
  /** Start of the bucket, milliseconds since the Unix epoch. */
  @ApiProperty({ type: 'integer', format: 'int64' })
  x!: number;
  /** Average number of vCPUs in use during the bucket (= vCPU-hours of a full one-hour bucket). */
  @ApiProperty({ format: 'double' })
  y!: number;
}

/** `UsageChartData` of the published API. */
export class UsageChartData {
  /** One point per hour from the window's start up to its end (or now, when sooner). */
  @ApiProperty({ type: () => [TimeSeriesPoint] })
  points!: TimeSeriesPoint[];
  /** Most vCPUs in use at the same moment within the window. */
  @ApiProperty({ format: 'double' })
  maxCPUCount!: number;
}

/** `WorkspaceComputeUsage` of the published API: dedicated compute used by a workspace within a window. */
@ApiExtraModels(DatabaseComputeUsage)
export class WorkspaceComputeUsage {
  /** Usage per database id (including databases since deleted). */
  @ApiProperty({ type: 'object', additionalProperties: { $ref: getSchemaPath(DatabaseComputeUsage) } })
  usageByDatabase!: Record<string, DatabaseComputeUsage>;
  chartData!: UsageChartData;
  @ApiProperty({ format: 'double' })
  totalVCPUHours!: number;
  /** Start of the window. */
  start!: Date;
  /** End of the window. */
  end!: Date;
}
