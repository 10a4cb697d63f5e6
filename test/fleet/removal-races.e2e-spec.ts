import { DataPlaneServerState } from '../../src/data-plane/data-plane-server.entity';
import { DataPlaneServers } from '../../src/data-plane/data-plane-servers.service';
import { Placement } from '../../src/databases/placement.service';
import { WarmPool } from '../../src/databases/warm-pool.service';
import { Auth, createWorkspace, serverIdOf, unique } from '../databases/support';
import { secondDataPlaneUrl } from '../support/second-data-plane';
import { untilAsleep, withSlowRows } from '../support/slow-rows';
import { createDeveloperWithToken, createIsolatedTestApp, TestApp } from '../support/test-app';

const REGION = 'AWS_US_WEST_2';

/**
 * Operator commands on a server racing with the work that places databases there. Each race is
 * forced open: a write of one side sleeps inside its transaction (withSlowRows) while the other
 * side runs, so only the code's own ordering decides the outcome.
 */
describe('server:remove and server:drain racing with placements', () => {
  let t: TestApp & { metadataUrl: string };
  let auth: Auth;
  let slug: string;
  let first: string;
  const servers = () => t.app.get(DataPlaneServers);
  /** What `server:remove` runs. */
  const remove = (id: string) => servers().remove(id, () => t.app.get(Placement).livingOn(id));
  const addSecond = async () =>
    (await servers().add({ region: REGION, url: secondDataPlaneUrl(), maxDatabases: 1000 })).id;
  const create = () =>
    t.http
      .post(`/workspaces/${slug}/databases`)
      .set(auth)
      .send({ databaseName: `race_${unique()}`, region: REGION });
  const serverOf = async (id: string) =>
    (await t.dataSource.query<{ server_id: string }[]>('SELECT server_id FROM databases WHERE id = $1', [id]))[0]
      .server_id;

  beforeAll(async () => {
    // No workers: nothing is built unless a test builds it, the races are between metadata
    // transactions only. A warm pool of 3 per server, which only the refill test builds.
    t = await createIsolatedTestApp({ DATABASE_POOL_TARGET: '3', WORKERS: 'off' });
    auth = (await createDeveloperWithToken(t.app)).auth;
    slug = (await createWorkspace(t, auth)).slug;
    first = await serverIdOf(t, REGION);
    // Every server added here is the emptier one, which placement prefers.
    await t.dataSource.query('UPDATE data_plane_servers SET max_databases = 100 WHERE id = $1', [first]);
  }, 120000);
  afterAll(() => t.close());

  it('a remove arriving while a create placed a database on the server is refused; the create stands (never 400)', async () => {
    const second = await addSecond();
    // The create has read its candidates and chosen `second` (the emptier); its insert sleeps.
    const { created, removed } = await withSlowRows(
      t.dataSource,
      { table: 'databases', on: 'INSERT', when: `NEW.server_id = '${second}'::uuid`, seconds: 1 },
      async () => {
        // A supertest request starts once awaited (then).
        const pending = create().then((res) => res);
        await untilAsleep(t.dataSource, 'INSERT');
        const removal = await remove(second).then(
          (view) => ({ ok: true as const, view }),
          (err: Error) => ({ ok: false as const, message: err.message }),
        );
        return { created: await pending, removed: removal };
      },
    );
    // One serial outcome: the create first (on `second`), then the remove refused.
    expect({ status: created.status, body: created.status === 201 ? undefined : created.body }).toEqual({
      status: 201,
      body: undefined,
    });
    expect(await serverOf(created.body.id)).toBe(second);
    expect(removed).toEqual({ ok: false, message: expect.stringMatching(/still holds 1 database\(s\)/) });
    expect(await t.dataSource.query('SELECT id FROM data_plane_servers WHERE id = $1', [second])).toHaveLength(1);
    // Out of the next races' way.
    await servers().setState(second, DataPlaneServerState.Draining);
  });

  it('a create arriving while a remove deletes the server is placed on another server (never 400)', async () => {
    const second = await addSecond();
    const { created, removed } = await withSlowRows(
      t.dataSource,
      { table: 'data_plane_servers', on: 'DELETE', when: `OLD.id = '${second}'::uuid`, seconds: 1 },
      async () => {
        const removal = remove(second).then(
          (view) => ({ ok: true as const, id: view.id }),
          (err: Error) => ({ ok: false as const, message: err.message }),
        );
        await untilAsleep(t.dataSource, 'DELETE');
        const res = await create();
        return { created: res, removed: await removal };
      },
    );
    expect(removed).toEqual({ ok: true, id: second });
    expect({ status: created.status, body: created.status === 201 ? undefined : created.body }).toEqual({
      status: 201,
      body: undefined,
    });
    expect(await serverOf(created.body.id)).toBe(first);
  });

  it('a drain arriving while a create placed a database on the server returns once that create committed: nothing lands there after it', async () => {
    const second = await addSecond();
    const onSecond = async () =>
      (await t.dataSource.query('SELECT id FROM databases WHERE server_id = $1', [second])).length;
    const { created, countAfterDrain } = await withSlowRows(
      t.dataSource,
      { table: 'databases', on: 'INSERT', when: `NEW.server_id = '${second}'::uuid`, seconds: 1 },
      async () => {
        const pending = create().then((res) => res);
        await untilAsleep(t.dataSource, 'INSERT');
        const drained = await servers().setState(second, DataPlaneServerState.Draining);
        expect(drained.state).toBe(DataPlaneServerState.Draining);
        // What the operator counts once the drain returned…
        const countAfterDrain = await onSecond();
        return { created: await pending, countAfterDrain };
      },
    );
    expect(created.status).toBe(201);
    expect(await serverOf(created.body.id)).toBe(second);
    // …already holds the create that chose the server before it: nothing came after.
    expect(countAfterDrain).toBe(1);
    expect(await onSecond()).toBe(1);
    // And what comes after the drain goes elsewhere.
    const later = await create();
    expect(later.status).toBe(201);
    expect(await serverOf(later.body.id)).toBe(first);
  });

  it('a state change or an update arriving while a remove deletes the server answers that there is no such server, never the server as it was', async () => {
    const second = await addSecond();
    await servers().setState(second, DataPlaneServerState.Draining);
    const { changes, removed } = await withSlowRows(
      t.dataSource,
      { table: 'data_plane_servers', on: 'DELETE', when: `OLD.id = '${second}'::uuid`, seconds: 1 },
      async () => {
        const removal = remove(second).then((view) => view.id);
        await untilAsleep(t.dataSource, 'DELETE');
        const outcome = (change: Promise<unknown>) =>
          change.then(
            () => 'changed',
            (err: Error) => err.message,
          );
        const changes = await Promise.all([
          outcome(servers().setState(second, DataPlaneServerState.Active)),
          outcome(servers().update(second, { maxDatabases: 5 })),
        ]);
        return { changes, removed: await removal };
      },
    );
    expect(removed).toBe(second);
    expect(changes).toEqual([
      expect.stringMatching(new RegExp(`No data-plane server ${second}`)),
      expect.stringMatching(new RegExp(`No data-plane server ${second}`)),
    ]);
  });

  it('a warm-pool refill running when its server is drained builds nothing more there and gives its pool back', async () => {
    const second = await addSecond();
    // The refill's first entry is built; its "ready" write sleeps while the server is drained.
    await withSlowRows(
      t.dataSource,
      {
        table: 'pooled_databases',
        on: 'UPDATE',
        when: `NEW.ready AND NOT OLD.ready AND NEW.server_id = '${second}'::uuid`,
        seconds: 1,
      },
      async () => {
        const refill = t.app.get(WarmPool).refill(second);
        await untilAsleep(t.dataSource, 'UPDATE');
        await servers().setState(second, DataPlaneServerState.Draining);
        await refill;
      },
    );
    // Before, the refill went on to build the whole target (3) on the drained server. It stops,
    // and gives back what it had built.
    expect(await t.dataSource.query('SELECT id FROM pooled_databases WHERE server_id = $1', [second])).toEqual([]);
  }, 60000);
});
