/** Rows one statement of a pruning deletes at most, and statements one reconcile pass runs at most. */
export const PRUNE_BATCH = 1000;
export const PRUNE_BATCHES_PER_PASS = 10;

/**
 * Runs `deleteBatch` (which deletes up to PRUNE_BATCH rows) until a batch comes back short, at most
 * PRUNE_BATCHES_PER_PASS times (a backlog takes several passes); how many rows it deleted.
 */
export async function pruneInBatches(deleteBatch: (take: number) => Promise<number>): Promise<number> {
  let deleted = 0;
  for (let batch = 0; batch < PRUNE_BATCHES_PER_PASS; batch += 1) {
    const count = await deleteBatch(PRUNE_BATCH);
    deleted += count;
    if (count < PRUNE_BATCH) break;
  }
  return deleted;
}
