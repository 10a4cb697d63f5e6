import type { Region } from '../config/regions';

/** Jobs of the `database-lifecycle` queue, with their deterministic ids (duplicates collapse). */
export const DatabaseJobs = {
  Provision: 'provision',
  FinalizeDeletion: 'finalize-deletion',
  RefillPool: 'refill-pool',
} as const;

export interface DatabaseJobData {
  databaseId: string;
}

export interface RefillPoolJobData {
  serverId?: string;
  /** Jobs enqueued before the fleet named a region: every server of it is refilled. */
  region?: Region;
}

export const provisionJobId = (databaseId: string) => `provision:${databaseId}`;
export const finalizeJobId = (databaseId: string) => `finalize:${databaseId}`;
export const refillPoolJobId = (serverId: string) => `refill-pool:${serverId}`;
