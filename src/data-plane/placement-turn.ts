import type { Region } from '../config/regions';

/**
 * The advisory lock of a region's placement turn (see lockForTransaction): whatever gives a server of
 * the region a new database or warm-pool entry (a create, a refill's reservation) reads the servers
 * and their room and writes its row under it, and whatever takes a server out from under them (its
 * removal) takes it too, so each sees the other's outcome. Taken before any server row is locked.
 */
export function placementTurnKey(region: Region): string {
  return `placement:${region}`;
}
