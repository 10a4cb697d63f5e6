import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { DataPlane } from '../../src/data-plane/data-plane.service';
import { JobDispatcher } from '../../src/queues/job-dispatcher';
import { Queues } from '../../src/queues/queue-names';
import { createReadyDatabase, createWorkspace, serverIdOf } from '../databases/support';
import { itWithPromtool, promtoolProblems } from '../support/promtool';
import {
  createDeveloperWithToken,
  createIsolatedTestApp,
  createTestApp,
  eventually,
  reconcile,
  TestApp,
  uniqueEmail,
} from '../support/test-app';

const PASSWORD = 'operator-password-for-tests';

/** The samples of one series name, as `labels value` lines (labels sorted as exposed). */
function samples(exposition: string, name: string): string[] {
  return exposition.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));
}

describe('GET /metrics (Prometheus)', () => {
  describe('without OPERATOR_PASSWORD', () => {
    let t: TestApp;
    beforeAll(async () => (t = await createTestApp({ OPERATOR_PASSWORD: '' })));
    afterAll(() => t.close());

    it('is not served', async () => {
      const res = await t.http.get('/metrics').expect(404);
      expect(res.body.errorCode).toBe('entity_not_found');
    });
  });

  describe('wrong operator credentials', () => {
    let t: TestApp;
    beforeAll(async () => (t = await createTestApp({ OPERATOR_PASSWORD: PASSWORD, RATE_LIMIT_AUTH_PER_MINUTE: '3' })));
    afterAll(() => t.close());

    it('are limited per address across /metrics and the queue dashboard: past the limit every request is 429 with Retry-After, right credentials included; right ones never count', async () => {
      for (let i = 0; i < 5; i++) await t.http.get('/metrics').auth('operator', PASSWORD).expect(200);
      await t.http.get('/metrics').auth('operator', 'guess-1').expect(401);
      await t.http.get('/admin/queues/api/queues').auth('operator', 'guess-2').expect(401);
      await t.http.get('/metrics').expect(401);

      for (const attempt of [
        t.http.get('/metrics').auth('operator', 'guess-3'),
        t.http.get('/metrics').auth('operator', PASSWORD),
        t.http.get('/admin/queues/api/queues').auth('operator', PASSWORD),
      ]) {
        const res = await attempt;
        expect(res.status).toBe(429);
        expect(res.body).toEqual({
          errorCode: 'threshold_exceeded',
          message: expect.stringMatching(/^Too many attempts at the operator credentials; retry in \d+ s$/),
          statusCode: 429,
        });
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60);
      }
    });
  });

  describe('a request its client gives up on', () => {
    let t: TestApp & { metadataUrl: string };
    beforeAll(async () => (t = await createIsolatedTestApp({ OPERATOR_PASSWORD: PASSWORD })));
    afterAll(() => t.close());

    it('is counted as 499 (client closed request), for as long as the client waited', async () => {
      const { auth } = await createDeveloperWithToken(t.app);
      const server = t.app.getHttpServer();
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      // The list waits for a lock held by another session (this spec's metadata database is its own).
      const blocker = new Client({ connectionString: t.metadataUrl });
      await blocker.connect();
      try {
        await blocker.query('BEGIN');
        await blocker.query('LOCK TABLE workspace_members IN ACCESS EXCLUSIVE MODE');
        const abandoned = request({ port, host: '127.0.0.1', path: '/workspaces', headers: auth });
        abandoned.on('error', () => undefined);
        abandoned.end();
        await eventually(async () => {
          const waiting = await t.dataSource.query(
            "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
          );
          return waiting.length > 0;
        }, 10000);
        await new Promise((resolve) => setTimeout(resolve, 300));
        abandoned.destroy();
        await new Promise((resolve) => setTimeout(resolve, 100));
      } finally {
        await blocker.query('ROLLBACK');
        await blocker.end();
      }
      const counts = samples(
        (await t.http.get('/metrics').auth('operator', PASSWORD).expect(200)).text,
        'http_request_duration_seconds_count',
      );
      expect(counts).toContainEqual(
        'http_request_duration_seconds_count{method="GET",route="/workspaces",status_code="499"} 1',
      );
      const sums = samples(
        (await t.http.get('/metrics').auth('operator', PASSWORD).expect(200)).text,
        'http_request_duration_seconds_sum',
      );
      const waited = sums.find((line) => line.includes('status_code="499"'));
      expect(Number(waited?.split(' ')[1])).toBeGreaterThanOrEqual(0.3);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    it('leaves the last reconcile pass out until one has ended (no pass has run in this app), instead of showing 0', async () => {
      const exposition = (await t.http.get('/metrics').auth('operator', PASSWORD).expect(200)).text;
      expect(exposition).toMatch(/^reconciler_passes_total 0$/m);
      expect(samples(exposition, 'reconciler_last_pass_timestamp_seconds')).toEqual([]);
      await reconcile(t.app);
      const after = (await t.http.get('/metrics').auth('operator', PASSWORD).expect(200)).text;
      expect(samples(after, 'reconciler_last_pass_timestamp_seconds')).toEqual([
        expect.stringMatching(/^reconciler_last_pass_timestamp_seconds \d+/),
      ]);
    });
  });

  describe('with OPERATOR_PASSWORD', () => {
    let t: TestApp;
    let serverId: string;
    let exposition: string;
    beforeAll(async () => {
      t = await createTestApp({ OPERATOR_PASSWORD: PASSWORD, DATABASE_POOL_TARGET: '0' });
      const { auth } = await createDeveloperWithToken(t.app);
      const { slug } = await createWorkspace(t, auth);
      const db = await createReadyDatabase(t, auth, slug);
      const credentials = `/workspaces/${slug}/databases/${db.name}/credentials`;
      await t.http.post(credentials).set(auth).send({}).expect(200);
      await t.http
        .post(`${credentials}/rotate`)
        .set(auth)
        .send({ delayOldSecretsExpirationHours: 2, reason: 'metrics' })
        .expect(200);
      await t.http
        .post(`/workspaces/${slug}/invites`)
        .set(auth)
        .send({ email: uniqueEmail('metrics') })
        .expect(201);
      await t.http.get('/workspaces').expect(401);
      await t.http.get(`/no/such/path/${Date.now()}`).expect(404);
      await t.http.get('/admin/queues/api/queues').auth('operator', PASSWORD).expect(200);
      await t.http.get('/docs/').expect(200);
      serverId = await serverIdOf(t);
      await t.app.get(DataPlane).shardingAvailable(serverId);
      await reconcile(t.app);
      const res = await t.http.get('/metrics').auth('operator', PASSWORD).expect(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(res.headers['cache-control']).toBe('no-store');
      exposition = res.text;
    });
    afterAll(() => t.close());

    it('answers a method other than GET or HEAD with 405 and Allow, as the worker does', async () => {
      for (const method of ['post', 'delete', 'options'] as const) {
        const res = await t.http[method]('/metrics').auth('operator', PASSWORD);
        expect({ method, status: res.status, allow: res.headers.allow, body: res.body }).toEqual({
          method,
          status: 405,
          allow: 'GET, HEAD',
          body: {
            errorCode: 'unsupported_operation',
            message: `${method.toUpperCase()} is not supported; use GET`,
            statusCode: 405,
          },
        });
      }
    });

    it('asks for the operator credentials with the error body', async () => {
      for (const attempt of [t.http.get('/metrics'), t.http.get('/metrics').auth('operator', 'wrong-password')]) {
        const res = await attempt.expect(401);
        expect(res.headers['www-authenticate']).toMatch(/^Basic realm="operator"/);
        expect(res.body).toEqual({
          errorCode: 'invalid_credentials',
          statusCode: 401,
          message: 'Operator credentials required',
        });
      }
    });

    it('counts HTTP requests by route template, method and status, never by raw path', () => {
      const counts = samples(exposition, 'http_request_duration_seconds_count');
      expect(counts).toEqual(
        expect.arrayContaining([
          expect.stringMatching(
            /^http_request_duration_seconds_count\{method="POST",route="\/workspaces",status_code="201"\} 1$/,
          ),
          expect.stringMatching(
            /^http_request_duration_seconds_count\{method="POST",route="\/workspaces\/:workspaceSlug\/databases",status_code="201"\} 1$/,
          ),
          expect.stringMatching(
            /^http_request_duration_seconds_count\{method="GET",route="\/workspaces",status_code="401"\} 1$/,
          ),
          expect.stringMatching(
            /^http_request_duration_seconds_count\{method="GET",route="unmatched",status_code="404"\} 1$/,
          ),
        ]),
      );
      expect(exposition).not.toContain('/no/such/path');
      // Mounted routers report their own templates under the mount point; their static files, the mount point.
      expect(counts).toContainEqual(
        'http_request_duration_seconds_count{method="GET",route="/admin/queues/api/queues",status_code="200"} 1',
      );
      expect(counts).toContainEqual(
        'http_request_duration_seconds_count{method="GET",route="/docs",status_code="200"} 1',
      );
      expect(exposition).toContain('http_request_duration_seconds_bucket{le="0.005",method="POST",route="/workspaces"');
    });

    it('shows every Bull queue by state and the jobs this process ran', () => {
      const jobs = samples(exposition, 'bull_queue_jobs');
      for (const queue of ['database-lifecycle', 'credential-expiry', 'invite-email', 'compute-lifecycle', 'billing']) {
        for (const state of ['waiting', 'active', 'delayed', 'failed']) {
          expect(jobs).toContainEqual(
            expect.stringMatching(new RegExp(`^bull_queue_jobs\\{queue="${queue}",state="${state}"\\} \\d+$`)),
          );
        }
      }
      // The rotation scheduled the old credential's expiry: a delayed job.
      expect(jobs).toContainEqual(
        expect.stringMatching(/^bull_queue_jobs\{queue="credential-expiry",state="delayed"\} [1-9]/),
      );
      expect(samples(exposition, 'bull_job_duration_seconds_count')).toContainEqual(
        expect.stringMatching(
          /^bull_job_duration_seconds_count\{queue="database-lifecycle",job="[a-z-]+",outcome="completed"\} [1-9]/,
        ),
      );
    });

    it('counts a job Bull fails for stalling (lost by another process) apart from the jobs that failed here', async () => {
      const queue = t.app.get(JobDispatcher).queue(Queues.Billing);
      // What Bull emits in the process that finds another's job stalled once too often.
      const lost = { name: 'rate-month', processedOn: Date.now() - 5000, finishedOn: Date.now() };
      queue.emit('failed', lost, new Error('job stalled more than allowable limit'), 'active');
      const scraped = (await t.http.get('/metrics').auth('operator', PASSWORD).expect(200)).text;
      expect(samples(scraped, 'bull_job_duration_seconds_count')).toContainEqual(
        'bull_job_duration_seconds_count{queue="billing",job="rate-month",outcome="stalled"} 1',
      );
      expect(samples(scraped, 'bull_job_duration_seconds_sum')).toContainEqual(
        expect.stringMatching(
          /^bull_job_duration_seconds_sum\{queue="billing",job="rate-month",outcome="stalled"\} 5(\.\d+)?$/,
        ),
      );
    });

    it('shows the metadata pool and the data-plane admin pool of each server', () => {
      for (const state of ['total', 'idle', 'waiting']) {
        expect(samples(exposition, 'metadata_pool_connections')).toContainEqual(
          expect.stringMatching(new RegExp(`^metadata_pool_connections\\{state="${state}"\\} \\d+$`)),
        );
      }
      // Labelled by the server's id: never its host, URL or credentials.
      expect(exposition).toMatch(
        new RegExp(`data_plane_pool_connections\\{server="${serverId}",state="total"\\} [1-9]`),
      );
      expect(exposition).not.toContain(new URL(process.env.DATA_PLANE_URL!).host);
      // The admin URL's credentials never appear.
      const password = new URL(process.env.DATA_PLANE_URL!).password;
      if (password) expect(exposition).not.toContain(password);
    });

    it('counts databases by status and credentials waiting to expire', () => {
      expect(exposition).toMatch(/^control_plane_databases\{status="READY"\} [1-9]/m);
      expect(exposition).toMatch(/^control_plane_credentials_expiring\{due="upcoming"\} [1-9]/m);
      expect(exposition).toMatch(/^control_plane_credentials_expiring\{due="overdue"\} \d+$/m);
    });

    it("shows the service's invite e-mails of the last hour beside its hourly limit", () => {
      // Other specs share this metadata database: at least the one sent above.
      expect(samples(exposition, 'control_plane_invite_emails_last_hour')).toEqual([
        expect.stringMatching(/^control_plane_invite_emails_last_hour [1-9]\d*$/),
      ]);
      // The limit the specs' apps run with (createTestApp).
      expect(samples(exposition, 'control_plane_invite_emails_per_hour_limit')).toEqual([
        'control_plane_invite_emails_per_hour_limit 1000000',
      ]);
    });

    it('counts reconciler passes, task runs and what they re-enqueued', () => {
      expect(exposition).toMatch(/^reconciler_passes_total 1$/m);
      expect(exposition).toMatch(/^reconciler_task_runs_total\{task="databases",outcome="ok"\} 1$/m);
      expect(exposition).toMatch(/^reconciler_last_pass_timestamp_seconds \d+/m);
      // The rotated-out credential waits for its expiry: the credentials task re-enqueued its job.
      expect(exposition).toMatch(
        /^reconciler_jobs_enqueued_total\{task="credentials",queue="credential-expiry"\} [1-9]/m,
      );
    });

    it('includes the process defaults', () => {
      expect(exposition).toMatch(/^process_cpu_user_seconds_total \d/m);
      expect(exposition).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
      expect(exposition).toMatch(/^process_resident_memory_bytes \d/m);
    });

    itWithPromtool('passes `promtool check metrics`', () => {
      const { status, output } = promtoolProblems(exposition);
      expect({ status, output }).toEqual({ status: 0, output: '' });
    });
  });
});
