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
  region: Region;
}

export const provisionJobId = (databaseId: string) => `provision:${databaseId}`;
export const finalizeJobId = (databaseId: string) => `finalize:${databaseId}`;
export const refillPoolJobId = (region: Region) => `refill-pool:${region}`;
