import { randomUUID } from 'node:crypto';
import { StorageUsageByWorkspace1795707811535 } from '../../src/migrations/1795707811535-StorageUsageByWorkspace';
import { dropMetadataDatabase } from '../support/test-app';
import { installBefore, revertBefore, upgraded, upgradeSpecUrl } from '../support/upgrade';

interface UsageRow {
  database_id: string;
  ym: string;
  workspace_id: string;
  byte_seconds: string;
  observed_seconds: string;
}

describe('an install whose storage usage was kept per database and month only', () => {
  let url: string;
  afterAll(() => dropMetadataDatabase(url));

  it('splits each month still wholly sampled by the workspace that held the database, leaves the rest, and reverts', async () => {
    url = upgradeSpecUrl('storage');
    const previous = await installBefore(url, StorageUsageByWorkspace1795707811535);

    const [holder, claimant, other] = [randomUUID(), randomUUID(), randomUUID()];
    const [claimed, pruned, untouched] = [randomUUID(), randomUUID(), randomUUID()];
    const sample = (databaseId: string, workspaceId: string, at: string, size: number, seconds: number) =>
      previous.query(
        `INSERT INTO database_telemetry_samples
           (database_id, sampled_at, workspace_id, server_key, observed_seconds, up_seconds, size_bytes, statements_available)
         VALUES ($1, $2, $3, 'server', $4, $4, $5, false)`,
        [databaseId, at, workspaceId, seconds, size],
      );
    const usage = (databaseId: string, ym: string, workspaceId: string, byteSeconds: number, seconds: number) =>
      previous.query(
        `INSERT INTO database_storage_usage (database_id, ym, workspace_id, byte_seconds, observed_seconds)
         VALUES ($1, $2, $3, $4, $5)`,
        [databaseId, ym, workspaceId, byteSeconds, seconds],
      );
    // Claimed mid-October: two samples while held, one after; the old row put them all on the holder.
    await sample(claimed, holder, '2026-10-10T00:00:00Z', 100, 60);
    await sample(claimed, holder, '2026-10-10T00:01:00Z', 100, 60);
    await sample(claimed, claimant, '2026-10-20T00:00:00Z', 200, 60);
    await usage(claimed, '2026-10', holder, 24000, 180);
    // September's samples partly pruned: the row cannot be split and stays as recorded.
    await sample(pruned, claimant, '2026-09-30T00:00:00Z', 300, 60);
    await usage(pruned, '2026-09', holder, 50000, 600);
    // Never moved: nothing to split.
    await sample(untouched, other, '2026-10-05T00:00:00Z', 10, 60);
    await usage(untouched, '2026-10', other, 600, 60);
    await previous.destroy();

    const db = await upgraded(url);
    try {
      const rows = () =>
        db.query<UsageRow[]>(
          `SELECT database_id, ym, workspace_id, byte_seconds::text, observed_seconds::text
             FROM database_storage_usage`,
        );
      const row = (database_id: string, ym: string, workspace_id: string, bytes: number, seconds: number) => ({
        database_id,
        ym,
        workspace_id,
        byte_seconds: String(bytes),
        observed_seconds: String(seconds),
      });
      const sorted = (list: UsageRow[]) =>
        [...list].sort((a, b) =>
          `${a.database_id} ${a.workspace_id}` < `${b.database_id} ${b.workspace_id}` ? -1 : 1,
        );
      expect(sorted(await rows())).toEqual(
        sorted([
          row(claimed, '2026-10', holder, 12000, 120),
          row(claimed, '2026-10', claimant, 12000, 60),
          row(pruned, '2026-09', holder, 50000, 600),
          row(untouched, '2026-10', other, 600, 60),
        ]),
      );
      // A sample of the new key adds to its own workspace's row.
      await db.query(
        `INSERT INTO database_storage_usage (database_id, ym, workspace_id, byte_seconds, observed_seconds)
         VALUES ($1, '2026-10', $2, 1, 1)
         ON CONFLICT (database_id, ym, workspace_id) DO UPDATE
            SET byte_seconds = database_storage_usage.byte_seconds + EXCLUDED.byte_seconds`,
        [claimed, claimant],
      );

      // Reverted (with the migrations after it): one row per database and month again, nothing lost.
      await revertBefore(db, StorageUsageByWorkspace1795707811535);
      const merged = await rows();
      expect(merged.filter((r) => r.database_id === claimed)).toEqual([
        expect.objectContaining({ ym: '2026-10', byte_seconds: '24001', observed_seconds: '180' }),
      ]);
      expect(merged).toHaveLength(3);
    } finally {
      await db.destroy();
    }
  }, 60000);
});
