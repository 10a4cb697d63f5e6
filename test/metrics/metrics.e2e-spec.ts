import { randomUUID } from 'node:crypto';
import { Auth, createReadyDatabase, createWorkspace, databaseRow } from '../databases/support';
import { waitForInstance } from '../compute/support';
import { createDeveloperWithToken, createTestApp, TestApp } from '../support/test-app';
import { insertPeriod } from './usage-periods';

const H = 3_600_000;
const t0 = Date.parse('2025-04-10T00:00:00Z');
const at = (hours: number) => new Date(t0 + hours * H);
const iso = (hours: number) => at(hours).toISOString();

describe('compute metrics', () => {
  let t: TestApp;
  let auth: Auth;
  beforeAll(async () => {
    t = await createTestApp({ DATABASE_POOL_TARGET: '0', DATABASE_DELETION_GRACE_SECONDS: '3600' });
    auth = (await createDeveloperWithToken(t.app)).auth;
  });
  afterAll(() => t.close());

  const metricsPath = (slug: string) => `/workspaces/${slug}/metrics/compute`;

  it('sums vCPU-hours per instance and database within the window, with an hourly chart', async () => {
    const ws = await createWorkspace(t, auth);
    const [dbA, dbB, instance1, instance2] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    // Instance 1: small (2 vCPUs) from before the window, resized to medium (4 vCPUs) at +3 h, stopped at +5 h.
    await insertPeriod(t, {
      workspaceId: ws.id,
      databaseId: dbA,
      instanceId: instance1,
      startedAt: at(-2),
      endedAt: at(3),
    });
    await insertPeriod(t, {
      workspaceId: ws.id,
      databaseId: dbA,
      instanceId: instance1,
      type: 'dc-medium',
      startedAt: at(3),
      endedAt: at(5),
    });
    // Instance 2: large (8 vCPUs) from +4 h, still running.
    await insertPeriod(t, {
      workspaceId: ws.id,
      databaseId: dbB,
      instanceId: instance2,
      type: 'dc-large',
      startedAt: at(4),
      endedAt: null,
    });
    // Before the window, and another workspace's: not counted.
    await insertPeriod(t, { workspaceId: ws.id, databaseId: dbA, startedAt: at(-10), endedAt: at(-5) });
    await insertPeriod(t, { workspaceId: randomUUID(), databaseId: dbA, startedAt: at(0), endedAt: at(6) });

    const res = await t.http
      .get(metricsPath(ws.slug))
      .query({ start: iso(0), end: iso(6) })
      .set(auth)
      .expect(200);
    expect(res.body).toEqual([
      {
        usageByDatabase: {
          [dbA]: {
            usageByInstance: {
              [instance1]: {
                totalVCPUHours: 14,
                size: 'medium',
                start: iso(0),
                end: iso(5),
                spans: [
                  { totalVCPUHours: 6, size: 'small', start: iso(0), end: iso(3) },
                  { totalVCPUHours: 8, size: 'medium', start: iso(3), end: iso(5) },
                ],
              },
            },
            totalVCPUHours: 14,
            start: iso(0),
            end: iso(5),
          },
          [dbB]: {
            usageByInstance: {
              [instance2]: {
                totalVCPUHours: 16,
                size: 'large',
                start: iso(4),
                end: iso(6),
                spans: [{ totalVCPUHours: 16, size: 'large', start: iso(4), end: iso(6) }],
              },
            },
            totalVCPUHours: 16,
            start: iso(4),
            end: iso(6),
          },
        },
        chartData: {
          points: [2, 2, 2, 4, 12, 8].map((y, hour) => ({ x: at(hour).getTime(), y })),
          maxCPUCount: 12,
        },
        totalVCPUHours: 30,
        start: iso(0),
        end: iso(6),
      },
    ]);
  });

  it('defaults to the 24 hours up to now, counting a running instance up to now', async () => {
    const ws = await createWorkspace(t, auth);
    const db = randomUUID();
    const instance = randomUUID();
    const startedAt = new Date(Date.now() - 2 * H);
    await insertPeriod(t, { workspaceId: ws.id, databaseId: db, instanceId: instance, startedAt, endedAt: null });
    const before = Date.now();
    const res = await t.http.get(metricsPath(ws.slug)).set(auth).expect(200);
    const after = Date.now();
    expect(res.body).toHaveLength(1);
    const [usage] = res.body;
    const end = Date.parse(usage.end);
    expect(end).toBeGreaterThanOrEqual(before);
    expect(end).toBeLessThanOrEqual(after);
    expect(end - Date.parse(usage.start)).toBe(24 * H);
    expect(usage.chartData.points).toHaveLength(24);
    expect(usage.chartData.points[0].x).toBe(Date.parse(usage.start));
    expect(usage.chartData.maxCPUCount).toBe(2);
    const instanceUsage = usage.usageByDatabase[db].usageByInstance[instance];
    expect(instanceUsage.start).toBe(startedAt.toISOString());
    expect(instanceUsage.end).toBe(usage.end);
    expect(usage.totalVCPUHours).toBeCloseTo((2 * (end - startedAt.getTime())) / H, 5);
  });

  it('takes end alone (start = 24 hours before) or start alone (end = now)', async () => {
    const ws = await createWorkspace(t, auth);
    const endOnly = await t.http
      .get(metricsPath(ws.slug))
      .query({ end: iso(24) })
      .set(auth)
      .expect(200);
    expect(endOnly.body[0]).toMatchObject({ start: iso(0), end: iso(24), totalVCPUHours: 0, usageByDatabase: {} });
    const startAt = new Date(Date.now() - 3 * H).toISOString();
    const startOnly = await t.http.get(metricsPath(ws.slug)).query({ start: startAt }).set(auth).expect(200);
    expect(startOnly.body[0].start).toBe(startAt);
    // Three full hours, then the last (partial) hour up to now.
    expect(startOnly.body[0].chartData.points.map((p: { x: number }) => p.x)).toEqual(
      [0, 1, 2, 3].map((h) => Date.parse(startAt) + h * H),
    );
  });

  it('starts the default window no earlier than 1970, the earliest start that can be asked for', async () => {
    const ws = await createWorkspace(t, auth);
    const early = await t.http.get(metricsPath(ws.slug)).query({ end: '1970-01-01T12:00:00Z' }).set(auth).expect(200);
    expect(early.body[0]).toMatchObject({ start: '1970-01-01T00:00:00.000Z', end: '1970-01-01T12:00:00.000Z' });
    expect(early.body[0].chartData.points.map((p: { x: number }) => p.x)).toEqual(
      Array.from({ length: 12 }, (_, h) => h * H),
    );
    const atEpoch = await t.http.get(metricsPath(ws.slug)).query({ end: '1970-01-01T00:00:00Z' }).set(auth);
    expect([atEpoch.status, atEpoch.body]).toEqual([
      400,
      {
        errorCode: 'bad_request',
        message: 'end must be after 1970-01-01T00:00:00Z when start is not given',
        statusCode: 400,
      },
    ]);
  });

  it('counts the instances of a database queued for deletion', async () => {
    const ws = await createWorkspace(t, auth);
    const db = await createReadyDatabase(t, auth, ws.slug);
    await t.http.delete(`/workspaces/${ws.slug}/databases/${db.name}`).set(auth).expect(200);
    expect((await databaseRow(t, db.id)).deleted).not.toBeNull();
    const period = await insertPeriod(t, { workspaceId: ws.id, databaseId: db.id, startedAt: at(0), endedAt: at(10) });

    const res = await t.http
      .get(metricsPath(ws.slug))
      .query({ start: iso(0), end: iso(24) })
      .set(auth)
      .expect(200);
    expect(res.body[0].usageByDatabase[db.id]).toMatchObject({
      totalVCPUHours: 20,
      usageByInstance: { [period.instanceId]: { totalVCPUHours: 20, size: 'small' } },
    });
    const totals = await t.http.get(`/workspaces/${ws.slug}/billing/2025-04/totals`).set(auth).expect(200);
    expect(totals.body.totals.compute).toBe(1);
  });

  it('measures and bills a dedicated instance created through the API once it runs', async () => {
    const ws = await createWorkspace(t, auth);
    const db = await createReadyDatabase(t, auth, ws.slug);
    const created = await t.http
      .post(`/workspaces/${ws.slug}/databases/${db.name}/compute`)
      .set(auth)
      .send({ instanceSize: 'dc-medium', instanceName: 'metered' })
      .expect(202);
    const instanceId = created.body.instanceId as string;
    await waitForInstance(t, auth, ws.slug, db.name, instanceId, 'READY');

    const res = await t.http.get(metricsPath(ws.slug)).set(auth).expect(200);
    const usage = res.body[0].usageByDatabase[db.id].usageByInstance[instanceId];
    expect(usage).toMatchObject({ size: 'medium', end: res.body[0].end });
    expect(usage.totalVCPUHours).toBeGreaterThan(0);
    expect(res.body[0].chartData.maxCPUCount).toBe(4);

    const now = new Date();
    const ym = `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, '0')}`;
    await t.http.get(`/workspaces/${ws.slug}/billing/${ym}/totals`).set(auth).expect(200);
    const lines = await t.dataSource.query<{ source_id: string; unit_price: string }[]>(
      `SELECT l.source_id, l.unit_price::text FROM billing_rated_lines l
         JOIN compute_usage_periods p ON p.id::text = l.source_id
        WHERE l.workspace_id = $1 AND l.ym = $2 AND l.component = 'compute' AND p.instance_id = $3`,
      [ws.id, ym, instanceId],
    );
    expect(lines).toEqual([{ source_id: expect.any(String), unit_price: '0.200000' }]);
  });

  it('refuses start and end that are not date-times, not in order, or too far apart', async () => {
    const ws = await createWorkspace(t, auth);
    const bad = (message: string) => ({ errorCode: 'bad_request', message, statusCode: 400 });
    const format = (field: string) =>
      `${field} must be an ISO 8601 date-time with a time zone, from 1970 to 9999 (UTC), e.g. 2025-03-01T12:00:00Z`;
    const cases: [Record<string, string>, string][] = [
      [{ start: 'yesterday' }, format('start')],
      [{ end: '2025-04-10' }, format('end')],
      [{ start: '2025-04-10T00:00:00' }, format('start')],
      [{ start: iso(5), end: iso(1) }, 'start must be before end'],
      [{ start: iso(1), end: iso(1) }, 'start must be before end'],
      [{ start: iso(0), end: iso(93 * 24 + 1) }, 'The window from start to end may span at most 93 days'],
      [{ from: iso(0) }, 'from: property from should not exist'],
    ];
    for (const [query, message] of cases) {
      const res = await t.http.get(metricsPath(ws.slug)).query(query).set(auth);
      expect([res.status, res.body]).toEqual([400, bad(message)]);
    }
    await t.http
      .get(metricsPath(ws.slug))
      .query({ start: iso(0), end: iso(93 * 24) })
      .set(auth)
      .expect(200);
  });
});
