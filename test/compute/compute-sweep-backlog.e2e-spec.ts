import { ComputeLifecycle } from '../../src/compute/compute-lifecycle.service';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { Queues } from '../../src/queues/queue-names';
import { createWorkspace, unique } from '../databases/support';
import { createDeveloperWithToken, createIsolatedTestApp, TestApp } from '../support/test-app';

/**
 * The compute sweep brings back lost jobs (a crash between the commit and the enqueue). Instances
 * that wait (their database not READY: a region's outage) stay unsettled for as long as it lasts,
 * and their rows do not change meanwhile: a sweep that took only the first batch of the least
 * recently updated ones re-enqueued the same waiting ones at every pass, and never the lost one.
 */
describe('the compute sweep under a backlog of waiting instances', () => {
  let t: TestApp;
  beforeAll(async () => {
    // No workers: the sweep's jobs stay in the queue, where the spec reads which instances have one.
    t = await createIsolatedTestApp({ WORKERS: 'off', COMPUTE_MAX_INSTANCES_PER_DATABASE: '100' });
  });
  afterAll(() => t.close());

  it('re-enqueues the job of every unsettled instance, however many wait before it', async () => {
    const { auth } = await createDeveloperWithToken(t.app);
    const ws = await createWorkspace(t, auth);
    // Databases never built here (no workers): their instances wait.
    const databases: string[] = [];
    for (let i = 0; i < 6; i += 1) {
      const res = await t.http
        .post(`/workspaces/${ws.slug}/databases`)
        .set(auth)
        .send({ databaseName: `waits_${unique()}`, region: 'AWS_US_WEST_2' })
        .expect(201);
      databases.push(res.body.id as string);
    }
    await t.dataSource.query(
      `INSERT INTO compute_instances (database_id, name, desired_instance_type_id, status, updated)
       SELECT d.id, 'waiting-' || n, 'dc-small', 'PENDING', now() - interval '1 hour'
         FROM unnest($1::uuid[]) AS d(id), generate_series(1, 100) AS n`,
      [databases],
    );
    // Recorded later without its job (a crash between commit and enqueue).
    const [{ id: lost }] = await t.dataSource.query<{ id: string }[]>(
      `INSERT INTO compute_instances (database_id, name, desired_instance_type_id, status)
       VALUES ($1, 'lost', 'dc-small', 'PENDING') RETURNING id`,
      [databases[0]],
    );

    await t.app.get(ComputeLifecycle).sweep();

    const queue = t.app.get(JobDispatcher).queue(Queues.ComputeLifecycle);
    expect(await queue.getJob(`compute-provision:${lost}`)).not.toBeNull();
    expect((await queue.getJobCounts()).waiting).toBe(601);
  });
});
