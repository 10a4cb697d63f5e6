import { randomUUID } from 'node:crypto';
import { ImplicitSubscription1795800000003 } from '../../src/migrations/1795800000003-ImplicitSubscription';
import { unique } from '../databases/support';
import { dropMetadataDatabase } from '../support/test-app';
import { installBefore, revertBefore, upgraded, upgradeSpecUrl } from '../support/upgrade';

describe('an install whose subscriptions do not yet mark the FREE row given at creation', () => {
  let url: string;
  afterAll(() => dropMetadataDatabase(url));

  it('marks implicit only the untouched given rows (the only row, FREE, from creation, open, changed by nobody), those written to the millisecond too, and reverts', async () => {
    url = upgradeSpecUrl('implicit');
    const previous = await installBefore(url, ImplicitSubscription1795800000003);

    const created = '2026-01-01T00:00:00Z';
    const later = '2026-02-01T00:00:00Z';
    const developer = randomUUID();
    const workspace = async (name: string, at = created): Promise<string> => {
      const [row] = await previous.query<{ id: string }[]>(
        'INSERT INTO workspaces (name, slug, created) VALUES ($1, $1, $2) RETURNING id',
        [`${name}-${unique()}`, at],
      );
      return row.id;
    };
    const subscription = async (
      workspaceId: string,
      level: string,
      from: string,
      to: string | null,
      changedBy: string | null,
    ): Promise<string> => {
      const [row] = await previous.query<{ id: string }[]>(
        `INSERT INTO subscriptions (workspace_id, level, valid_from, valid_to, changed_by)
         VALUES ($1, $2, $3, $4, $5) RETURNING id`,
        [workspaceId, level, from, to, changedBy],
      );
      return row.id;
    };
    // Read but never written by a client: the one row given at creation.
    const given = await subscription(await workspace('given'), 'FREE', created, null, null);
    // The same, written by a release that took the creation from a JavaScript Date: to the millisecond
    // (`workspaces.created` has microseconds).
    const givenToTheMillisecond = await subscription(
      await workspace('given-ms', '2026-01-01T00:00:00.123456Z'),
      'FREE',
      '2026-01-01T00:00:00.123Z',
      null,
      null,
    );
    // Changed to PRO: the given row ended, PRO started.
    const changedWs = await workspace('changed');
    const changedFree = await subscription(changedWs, 'FREE', created, later, null);
    const changedPro = await subscription(changedWs, 'PRO', later, null, developer);
    // Closed, then started again at FREE by a client.
    const restartedWs = await workspace('restarted');
    const closedFree = await subscription(restartedWs, 'FREE', created, later, null);
    const restartedFree = await subscription(restartedWs, 'FREE', later, null, developer);
    // A change made at the very instant of the creation: the given row took the new level.
    const sameInstant = await subscription(await workspace('same-instant'), 'PRO', created, null, developer);
    // Closed at a future time: still current, but a client wrote it.
    const closing = await subscription(await workspace('closing'), 'FREE', created, '2999-01-01T00:00:00Z', null);
    // A FREE row not from the workspace's creation (not the given row).
    const notFromCreation = await subscription(await workspace('not-from-creation'), 'FREE', later, null, null);
    // A workspace whose subscription was never read has no row, and gets none.
    const unread = await workspace('unread');
    await previous.destroy();

    const db = await upgraded(url);
    try {
      const marked = new Map(
        (await db.query<{ id: string; implicit: boolean }[]>('SELECT id, implicit FROM subscriptions')).map((r) => [
          r.id,
          r.implicit,
        ]),
      );
      expect(Object.fromEntries(marked)).toEqual({
        [given]: true,
        [givenToTheMillisecond]: true,
        [changedFree]: false,
        [changedPro]: false,
        [closedFree]: false,
        [restartedFree]: false,
        [sameInstant]: false,
        [closing]: false,
        [notFromCreation]: false,
      });
      expect(await db.query('SELECT id FROM subscriptions WHERE workspace_id = $1', [unread])).toEqual([]);
      // A row written without the column (as a client's start or change is) is not implicit.
      const [inserted] = await db.query<{ implicit: boolean }[]>(
        `INSERT INTO subscriptions (workspace_id, level, valid_from) VALUES ($1, 'FREE', now()) RETURNING implicit`,
        [unread],
      );
      expect(inserted).toEqual({ implicit: false });

      // Reverted (with the migrations after it): the column goes, the rows stay as they were.
      await revertBefore(db, ImplicitSubscription1795800000003);
      const columns = await db.query<{ column_name: string }[]>(
        `SELECT column_name FROM information_schema.columns WHERE table_name = 'subscriptions' AND column_name = 'implicit'`,
      );
      expect(columns).toEqual([]);
      expect(await db.query('SELECT count(*)::int AS n FROM subscriptions')).toEqual([{ n: 10 }]);
    } finally {
      await db.destroy();
    }
  }, 60000);
});
