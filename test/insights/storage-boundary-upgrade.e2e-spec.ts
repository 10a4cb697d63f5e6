import { randomUUID } from 'node:crypto';
import { StorageMonthOfBoundarySamples1795800000008 } from '../../src/migrations/1795800000008-StorageMonthOfBoundarySamples';
import { dropMetadataDatabase } from '../support/test-app';
import { installBefore, revertBefore, upgraded, upgradeSpecUrl } from '../support/upgrade';

describe('an install that metered the sample at 00:00Z on the 1st to the new month', () => {
  let url: string;
  afterAll(() => dropMetadataDatabase(url));

  it('moves the storage of the boundary samples still kept to the month they close, leaves the rest, and reverts', async () => {
    url = upgradeSpecUrl('boundary');
    const previous = await installBefore(url, StorageMonthOfBoundarySamples1795800000008);

    const [workspace, claimant] = [randomUUID(), randomUUID()];
    const [spanning, onlyBoundary, pruned] = [randomUUID(), randomUUID(), randomUUID()];
    const sample = (databaseId: string, workspaceId: string, at: string, size: number | null) =>
      previous.query(
        `INSERT INTO database_telemetry_samples
           (database_id, sampled_at, workspace_id, server_key, observed_seconds, up_seconds, size_bytes, statements_available)
         VALUES ($1, $2, $3, 'server', 60, 60, $4, false)`,
        [databaseId, at, workspaceId, size],
      );
    const usage = (databaseId: string, ym: string, workspaceId: string, byteSeconds: number, seconds: number) =>
      previous.query(
        `INSERT INTO database_storage_usage (database_id, ym, workspace_id, byte_seconds, observed_seconds)
         VALUES ($1, $2, $3, $4, $5)`,
        [databaseId, ym, workspaceId, byteSeconds, seconds],
      );
    // October's last minute ends at November's first sample, which the old rule gave to November.
    await sample(spanning, workspace, '2026-10-31T23:59:00Z', 100);
    await sample(spanning, workspace, '2026-11-01T00:00:00Z', 200);
    await sample(spanning, workspace, '2026-11-01T00:01:00Z', 300);
    await usage(spanning, '2026-10', workspace, 6000, 60);
    await usage(spanning, '2026-11', workspace, 30000, 120);
    // Claimed at the boundary: the sample was the claimant's, and so was its row.
    await sample(spanning, claimant, '2026-12-01T00:00:00Z', 400);
    await usage(spanning, '2026-12', claimant, 24000, 60);
    // A size the statistics could not read adds nothing, and moves nothing.
    await sample(onlyBoundary, workspace, '2026-09-01T00:00:00Z', null);
    await sample(onlyBoundary, workspace, '2026-10-01T00:00:00Z', 50);
    await usage(onlyBoundary, '2026-10', workspace, 3000, 60);
    // Its boundary sample pruned: the row stays as recorded.
    await usage(pruned, '2026-08', workspace, 9000, 60);
    await previous.destroy();

    const db = await upgraded(url);
    const rows = async () =>
      Object.fromEntries(
        (
          await db.query<{ key: string; byte_seconds: string; observed_seconds: string }[]>(
            `SELECT database_id || ' ' || ym || ' ' || workspace_id AS key, byte_seconds::text, observed_seconds::text
               FROM database_storage_usage`,
          )
        ).map((r) => [r.key, [Number(r.byte_seconds), Number(r.observed_seconds)]]),
      );
    try {
      expect(await rows()).toEqual({
        [`${spanning} 2026-10 ${workspace}`]: [6000 + 12000, 120],
        [`${spanning} 2026-11 ${workspace}`]: [18000, 60],
        [`${spanning} 2026-11 ${claimant}`]: [24000, 60],
        [`${onlyBoundary} 2026-09 ${workspace}`]: [3000, 60],
        [`${pruned} 2026-08 ${workspace}`]: [9000, 60],
      });

      // Reverted (the later migrations first): each boundary sample's storage goes back to the month
      // that starts with it.
      await revertBefore(db, StorageMonthOfBoundarySamples1795800000008);
      expect(await rows()).toEqual({
        [`${spanning} 2026-10 ${workspace}`]: [6000, 60],
        [`${spanning} 2026-11 ${workspace}`]: [30000, 120],
        [`${spanning} 2026-12 ${claimant}`]: [24000, 60],
        [`${onlyBoundary} 2026-10 ${workspace}`]: [3000, 60],
        [`${pruned} 2026-08 ${workspace}`]: [9000, 60],
      });
    } finally {
      await db.destroy();
    }
  }, 60000);
});
