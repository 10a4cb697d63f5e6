import { ApiProperty } from '@nestjs/swagger';

/** `WorkspaceMonthlyTotalsDto` of the published API. */
export class WorkspaceMonthlyTotalsDto {
  /** The month, `YYYY-MM` (UTC). */
  @ApiProperty({ example: '2025-03' })
  ym!: string;
  /**
   * US dollars per billing component, rounded to cents: `compute` (dedicated compute instances),
   * `subscription` (the level's monthly price, prorated), `storage` (average GB held over the month
   * beyond the included allowance) and `total` (their sum); all always present (0 when nothing).
   */
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'number' },
    example: { compute: 1.0, subscription: 12.5, storage: 0.25, total: 13.75 },
  })
  totals!: Record<string, number>;
}
