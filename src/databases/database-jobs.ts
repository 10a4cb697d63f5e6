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

/**
 * A build: with where the create placed the database (never changed afterwards), so the job takes
 * the database's data-plane lock without reading the row first. Jobs enqueued by the sweep, or by
 * an earlier version, carry only the id.
 */
export interface ProvisionJobData extends DatabaseJobData {
  placement?: DatabasePlacement;
}

export interface DatabasePlacement {
  serverId: string;
  physicalName: string;
}

export interface RefillPoolJobData {
  serverId?: string;
  /** Jobs enqueued before the fleet named a region: every server of it is refilled. */
  region?: Region;
}

export const provisionJobId = (databaseId: string) => `provision:${databaseId}`;
export const finalizeJobId = (databaseId: string) => `finalize:${databaseId}`;
export const refillPoolJobId = (serverId: string) => `refill-pool:${serverId}`;
