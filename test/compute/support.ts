import { eventually, TestApp } from '../support/test-app';
import { Auth, databaseRow, onDataPlane } from '../databases/support';

export interface InstanceBody {
  instanceId: string;
  instanceName: string;
  status: string;
  instanceType: { id: string; computeSize: string; memory: string; hourlyCost: number };
  desiredInstanceType: { id: string; computeSize: string; memory: string; hourlyCost: number };
  database: { id: string; name: string };
  workspace: { id: string; slug: string };
  region: string;
  created: string;
  updated: string;
  deleted?: string;
}

export interface InstanceRow {
  id: string;
  database_id: string;
  name: string;
  instance_type_id: string | null;
  desired_instance_type_id: string;
  status: string;
  last_error: string | null;
  created: Date;
  updated: Date;
  deleted: Date | null;
  terminated: Date | null;
}

export interface PeriodRow {
  id: string;
  instance_id: string;
  database_id: string;
  workspace_id: string;
  instance_type_id: string;
  compute_size: string;
  vcpus: number;
  hourly_cost: string;
  started_at: Date;
  ended_at: Date | null;
}

export const TYPES = {
  small: { id: 'dc-small', computeSize: 'small', memory: '4 GiB', hourlyCost: 0.1 },
  medium: { id: 'dc-medium', computeSize: 'medium', memory: '8 GiB', hourlyCost: 0.2 },
  large: { id: 'dc-large', computeSize: 'large', memory: '16 GiB', hourlyCost: 0.4 },
  xlarge: { id: 'dc-xlarge', computeSize: 'xlarge', memory: '32 GiB', hourlyCost: 0.8 },
};

/** The metadata row of an instance (what the service recorded). */
export async function instanceRow(t: TestApp, id: string): Promise<InstanceRow> {
  const [row] = await t.dataSource.query('SELECT * FROM compute_instances WHERE id = $1', [id]);
  return row as InstanceRow;
}

/** The usage periods of an instance, oldest first. */
export function periodsOf(t: TestApp, instanceId: string): Promise<PeriodRow[]> {
  return t.dataSource.query<PeriodRow[]>(
    'SELECT * FROM compute_usage_periods WHERE instance_id = $1 ORDER BY started_at, id',
    [instanceId],
  );
}

/** `pg_database.datconnlimit` of a database (by its id in the metadata DB) on the real data plane. */
export async function connectionLimit(t: TestApp, databaseId: string): Promise<number> {
  const { physical_name: physical } = await databaseRow(t, databaseId);
  return onDataPlane(async (db) => {
    const { rows } = await db.query<{ datconnlimit: number }>(
      'SELECT datconnlimit FROM pg_database WHERE datname = $1',
      [physical],
    );
    if (!rows.length) throw new Error(`no database ${physical} on the data plane`);
    return rows[0].datconnlimit;
  });
}

/**
 * Polls the API until the instance has this status; returns its representation. Generous: the
 * compute-lifecycle queue runs one provisioning job at a time and CI runs two spec files at once.
 */
export function waitForInstance(
  t: TestApp,
  auth: Auth,
  slug: string,
  databaseName: string,
  instanceId: string,
  status: string,
): Promise<InstanceBody> {
  return eventually(async () => {
    const res = await t.http.get(`/workspaces/${slug}/databases/${databaseName}/compute/${instanceId}`).set(auth);
    return res.status === 200 && res.body.status === status ? (res.body as InstanceBody) : null;
  }, 60000);
}
