import { randomUUID } from 'node:crypto';
import type { TestApp } from '../support/test-app';

export interface PeriodRow {
  id: string;
  instanceId: string;
  databaseId: string;
  workspaceId: string;
}

/**
 * Inserts a compute usage period as the compute lifecycle would record it (the table has no
 * foreign keys, so a database id may be made up where no real database is needed).
 */
export async function insertPeriod(
  t: TestApp,
  period: {
    workspaceId: string;
    databaseId?: string;
    instanceId?: string;
    type?: 'dc-small' | 'dc-medium' | 'dc-large' | 'dc-xlarge';
    startedAt: string | Date;
    endedAt: string | Date | null;
  },
): Promise<PeriodRow> {
  const types = {
    'dc-small': ['small', 2, 0.1],
    'dc-medium': ['medium', 4, 0.2],
    'dc-large': ['large', 8, 0.4],
    'dc-xlarge': ['xlarge', 16, 0.8],
  } as const;
  const type = period.type ?? 'dc-small';
  const [size, vcpus, cost] = types[type];
  const row = {
    id: randomUUID(),
    instanceId: period.instanceId ?? randomUUID(),
    databaseId: period.databaseId ?? randomUUID(),
    workspaceId: period.workspaceId,
  };
  await t.dataSource.query(
    `INSERT INTO compute_usage_periods
       (id, instance_id, database_id, workspace_id, instance_type_id, compute_size, vcpus, hourly_cost, started_at, ended_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [
      row.id,
      row.instanceId,
      row.databaseId,
      row.workspaceId,
      type,
      size,
      vcpus,
      cost,
      new Date(period.startedAt),
      period.endedAt === null ? null : new Date(period.endedAt),
    ],
  );
  return row;
}
