import type { Job } from 'bull';
import { DataPlaneServerState } from '../../src/data-plane/data-plane-server.entity';
import { DataPlaneServers } from '../../src/data-plane/data-plane-servers.service';
import { ServerTelemetry } from '../../src/data-plane/telemetry';
import { sampleServerJobId, type SampleServerJobData } from '../../src/insights/telemetry-jobs';
import { TelemetrySampler } from '../../src/insights/telemetry-sampler.service';
import { OperationsMetrics } from '../../src/observability/operations-metrics';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { Queues } from '../../src/queues/queue-names';
import {
  Auth,
  backdate,
  createReadyDatabase,
  createWorkspace,
  DatabaseBody,
  LONG_AGO,
  serverIdOf,
  unique,
} from '../databases/support';
import { secondDataPlaneUrl } from '../support/second-data-plane';
import { TcpRelay } from '../support/tcp-relay';
import {
  createDeveloperWithToken,
  createIsolatedTestApp,
  eventually,
  TestApp,
  untilQueueIdle,
} from '../support/test-app';

const REGION = 'AWS_US_WEST_2';
/** DATA_PLANE_CONNECT_TIMEOUT_MS here: what the statistics read of a server that does not answer waits. */
const CONNECT_TIMEOUT_MS = 1000;
/** TELEMETRY_PROBE_TIMEOUT_MS here. */
const PROBE_TIMEOUT_MS = 1000;
/** TELEMETRY_PROBE_CONCURRENCY (the default). */
const PROBES_AT_ONCE = 16;
/** TELEMETRY_INTERVAL_SECONDS (the default), in ms. */
const INTERVAL_MS = 60_000;
/** Databases on the stalled server: probing each would take 640 / 16 × 1 s = 40 s. */
const STALLED_DATABASES = 640;
/**
 * A pass over the stalled server: the statistics read's connect timeout and a probe timeout or two,
 * with generous room for a busy machine; far below the 40 s of probing every database.
 */
const PASS_BOUND_MS = CONNECT_TIMEOUT_MS + 2 * PROBE_TIMEOUT_MS + 7000;

const SECOND_URL = secondDataPlaneUrl;

/**
 * Telemetry while one data-plane server accepts connections and never answers (a hung server, a
 * network that drops packets): its pass ends within a bound whatever it holds, recording its
 * databases down; a pass job whose interval is over is skipped; the other servers' passes do not
 * wait behind the stalled one's.
 */
describe('telemetry while one data-plane server does not answer', () => {
  let t: TestApp & { metadataUrl: string };
  /** The second data-plane cluster behind a relay that can stall. */
  let link: TcpRelay;
  let auth: Auth;
  let workspace: { id: string; slug: string };
  let sampler: TelemetrySampler;
  let healthy: string;
  let stalled: string;
  let healthyDb: DatabaseBody;
  let stalledIds: string[];

  const samplesAt = async (at: Date, server: string) =>
    t.dataSource.query<{ database_id: string; up_seconds: number; observed_seconds: number }[]>(
      `SELECT database_id, up_seconds, observed_seconds FROM database_telemetry_samples
        WHERE sampled_at = $1 AND server_key = $2`,
      [at, server],
    );

  beforeAll(async () => {
    link = await TcpRelay.inFrontOf(SECOND_URL());
    t = await createIsolatedTestApp({
      DATABASE_POOL_TARGET: '0',
      DATA_PLANE_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      TELEMETRY_PROBE_TIMEOUT_MS: String(PROBE_TIMEOUT_MS),
      TELEMETRY_PROBE_CONCURRENCY: String(PROBES_AT_ONCE),
      TELEMETRY_INTERVAL_SECONDS: String(INTERVAL_MS / 1000),
    });
    // The passes of this spec are enqueued by hand: no background schedule.
    const queue = t.app.get(JobDispatcher).queue(Queues.Telemetry);
    for (const job of await queue.getRepeatableJobs()) await queue.removeRepeatableByKey(job.key);
    sampler = t.app.get(TelemetrySampler);
    auth = (await createDeveloperWithToken(t.app)).auth;
    workspace = await createWorkspace(t, auth);
    healthy = await serverIdOf(t, REGION);
    const servers = t.app.get(DataPlaneServers);
    stalled = (await servers.add({ region: REGION, url: link.through(SECOND_URL()), maxDatabases: 100000 })).id;
    // One real database on the healthy server; the stalled one's never answer, so rows suffice.
    await servers.setState(stalled, DataPlaneServerState.Draining);
    healthyDb = await createReadyDatabase(t, auth, workspace.slug);
    // Created before the moments the passes below sample.
    await backdate(t, [healthyDb.id], LONG_AGO);
    stalledIds = (
      await t.dataSource.query<{ id: string }[]>(
        `INSERT INTO databases (workspace_id, name, region, server_id, status, physical_name, created)
         SELECT $1, 'stalled_' || $2 || '_' || i, $3, $4, 'READY', $5 || md5($2 || i), $7
           FROM generate_series(1, $6::int) AS i
         RETURNING id`,
        [workspace.id, unique(), REGION, stalled, process.env.DATA_PLANE_NAME_PREFIX, STALLED_DATABASES, LONG_AGO],
      )
    ).map((r) => r.id);
  }, 120000);
  afterAll(async () => {
    await t?.close();
    await link?.down();
  });
  afterEach(() => {
    jest.restoreAllMocks();
    link.resume();
  });

  it('a pass over it ends within a bound however many databases it holds, and records them down', async () => {
    const server = (await sampler.serverToSample(stalled))!;
    expect(server.databases).toHaveLength(STALLED_DATABASES);
    await link.stall();

    // A few databases, and all of them: the same bound. Before, the second took 40 s.
    const few = server.databases.slice(0, PROBES_AT_ONCE);
    const atFew = new Date(Date.now() - 5 * INTERVAL_MS);
    let started = Date.now();
    expect(await sampler.sampleServer({ key: stalled, databases: few }, atFew)).toEqual({
      sampled: few.length,
      up: 0,
      statementsAvailable: false,
      unprobed: 0,
    });
    expect(Date.now() - started).toBeLessThan(PASS_BOUND_MS);

    const notAnsweringBefore = sampler.passCounts.serverNotAnswering;
    const at = new Date(Date.now() - 4 * INTERVAL_MS);
    started = Date.now();
    const pass = await sampler.sampleServer(server, at);
    expect(Date.now() - started).toBeLessThan(PASS_BOUND_MS);
    // Its statistics could not be read: one wave of probes confirmed the server does not answer.
    expect(pass).toEqual({
      sampled: STALLED_DATABASES,
      up: 0,
      statementsAvailable: false,
      unprobed: STALLED_DATABASES - PROBES_AT_ONCE,
    });
    expect(sampler.passCounts.serverNotAnswering).toBe(notAnsweringBefore + 1);

    // Every database has its sample: observed, and down (its probe would have found it so).
    const samples = await samplesAt(at, stalled);
    expect(samples.map((s) => s.database_id).sort()).toEqual([...stalledIds].sort());
    expect(new Set(samples.map((s) => `${s.up_seconds}/${s.observed_seconds}`))).toEqual(new Set(['0/60']));
    const window = `start=${at.toISOString().slice(0, 17)}00Z&end=${new Date(at.getTime() + INTERVAL_MS).toISOString().slice(0, 17)}00Z&granularity=1m`;
    const uptime = await t.http
      .get(`/workspaces/${workspace.slug}/databases/${stalledIds[STALLED_DATABASES - 1]}/insights/uptime?${window}`)
      .set(auth)
      .expect(200);
    expect(uptime.body.summary).toEqual({ uptimePercentage: 0, uptimeSeconds: 0, observedSeconds: 60 });
  }, 120000);

  it('stops probing once a wave of probes goes unanswered, even when its statistics were read', async () => {
    // Statistics that answer (as from a server whose new connections hang while its admin sessions work).
    jest.spyOn(ServerTelemetry.prototype, 'databaseCounters').mockResolvedValue([]);
    jest.spyOn(ServerTelemetry.prototype, 'statementCounters').mockResolvedValue([]);
    const server = (await sampler.serverToSample(stalled))!;
    await link.stall();
    const at = new Date(Date.now() - 3 * INTERVAL_MS);
    const started = Date.now();
    const pass = await sampler.sampleServer(server, at);
    expect(Date.now() - started).toBeLessThan(PASS_BOUND_MS);
    expect(pass).toMatchObject({ sampled: STALLED_DATABASES, up: 0, statementsAvailable: true });
    // A wave, or two when the next wave had started before the first one's probes had all ended.
    expect(pass.unprobed).toBeGreaterThanOrEqual(STALLED_DATABASES - 2 * PROBES_AT_ONCE);
  }, 120000);

  it('skips a pass job whose interval is over, and counts it', async () => {
    const jobs = t.app.get(JobDispatcher);
    const skippedBefore = sampler.passCounts.skippedStale;
    const stale = new Date(Date.now() - 2 * INTERVAL_MS);
    expect(
      await jobs.dispatch(
        'SampleTelemetryServer',
        { serverKey: healthy, at: stale.toISOString() },
        { jobId: sampleServerJobId(healthy, stale) },
      ),
    ).toBe(true);
    await untilQueueIdle(t.app, Queues.Telemetry, 30000);
    expect(await samplesAt(stale, healthy)).toEqual([]);
    expect(sampler.passCounts.skippedStale).toBe(skippedBefore + 1);
    const { body } = await t.app.get(OperationsMetrics).exposition();
    expect(body).toMatch(new RegExp(`^telemetry_passes_total\\{outcome="skipped_stale"\\} ${skippedBefore + 1}$`, 'm'));

    // A pass of the interval under way runs.
    const timely = new Date(Date.now() - 1000);
    await jobs.dispatch(
      'SampleTelemetryServer',
      { serverKey: healthy, at: timely.toISOString() },
      { jobId: sampleServerJobId(healthy, timely) },
    );
    await untilQueueIdle(t.app, Queues.Telemetry, 30000);
    expect((await samplesAt(timely, healthy)).map((s) => s.database_id)).toEqual([healthyDb.id]);
  }, 60000);

  it("does not hold a healthy server's pass behind the stalled one's", async () => {
    const jobs = t.app.get(JobDispatcher);
    const queue = jobs.queue(Queues.Telemetry);
    const finished: string[] = [];
    const onCompleted = (job: Job<SampleServerJobData>) => {
      if (job.name === 'sample-server') finished.push(`${job.data.serverKey}@${job.data.at}`);
    };
    queue.on('completed', onCompleted);
    try {
      await link.stall();
      // A backlog on the stalled server (two of its passes, of slots not yet over), then the healthy
      // server's pass. Before, the queue ran two jobs at once (Bull adds up the concurrency of a
      // queue's handlers: one each), both taken by the stalled server's passes, and the healthy
      // server's waited for one of them to end.
      const now = Date.now();
      const passes = [
        { serverKey: stalled, at: new Date(now - 2000) },
        { serverKey: stalled, at: new Date(now - 1000) },
        { serverKey: healthy, at: new Date(now - 1000) },
      ];
      for (const { serverKey, at } of passes) {
        expect(
          await jobs.dispatch(
            'SampleTelemetryServer',
            { serverKey, at: at.toISOString() },
            { jobId: sampleServerJobId(serverKey, at) },
          ),
        ).toBe(true);
      }
      await eventually(() => Promise.resolve(finished.length === passes.length), 60000);
      expect(finished[0]).toBe(`${healthy}@${passes[2].at.toISOString()}`);
      expect((await samplesAt(passes[2].at, healthy)).map((s) => s.database_id)).toEqual([healthyDb.id]);
      for (const { at } of passes.slice(0, 2)) expect(await samplesAt(at, stalled)).toHaveLength(STALLED_DATABASES);
    } finally {
      queue.removeListener('completed', onCompleted);
    }
  }, 90000);
});
