import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';

type Db = { query(sql: string, params?: unknown[]): Promise<unknown> };

/** Which row writes a trigger acts on. */
export interface RowWrites {
  table: string;
  on: 'INSERT' | 'UPDATE' | 'DELETE';
  /** The trigger's WHEN condition on NEW./OLD. columns, so that only the test's own rows are touched. */
  when: string;
}

/** Which row writes wait, and how long. */
export interface SlowRows extends RowWrites {
  /** How long each matching write waits; 0.3 s unless told. */
  seconds?: number;
}

/**
 * Runs `work` while a BEFORE trigger runs `statements` (PL/pgSQL) on every `on` statement on the rows
 * of `table` matching `when` (only the first such write with `firstOnly`), inside the writing
 * transaction, before the row is written. `work` gets how many matching writes came so far. The
 * trigger, its function and its counter are dropped afterwards, whatever happened.
 */
export async function withRowTrigger<T>(
  db: Db,
  writes: RowWrites & { statements: string; firstOnly?: boolean },
  work: (hits: () => Promise<number>) => Promise<T>,
): Promise<T> {
  const name = `row_trigger_${randomBytes(4).toString('hex')}`;
  await db.query(`CREATE SEQUENCE ${name}`);
  try {
    await db.query(
      `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
         DECLARE hit bigint := nextval('${name}');
         BEGIN
           IF ${writes.firstOnly ? 'hit = 1' : 'true'} THEN ${writes.statements} END IF;
           IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
           RETURN NEW;
         END $$`,
    );
    try {
      await db.query(
        `CREATE TRIGGER ${name} BEFORE ${writes.on} ON ${writes.table} FOR EACH ROW
           WHEN (${writes.when}) EXECUTE FUNCTION ${name}()`,
      );
      try {
        return await work(async () => {
          const rows = (await db.query(
            `SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS hits FROM ${name}`,
          )) as { hits: string }[];
          return Number(rows[0].hits);
        });
      } finally {
        await db.query(`DROP TRIGGER ${name} ON ${writes.table}`);
      }
    } finally {
      await db.query(`DROP FUNCTION ${name}()`);
    }
  } finally {
    await db.query(`DROP SEQUENCE ${name}`);
  }
}

/**
 * Runs `work` while every `on` statement on the rows of `table` matching `when` sleeps `seconds`
 * inside its transaction, after whatever the code read before it. Requests that do not take turns
 * (on a lock, a row lock, a conditional write) therefore all read the state before any of them
 * writes: the race window is open on every run, not by luck, and only the code's own ordering
 * makes the later ones see the earlier ones' outcome.
 */
export function withSlowRows<T>(db: Db, slow: SlowRows, work: () => Promise<T>): Promise<T> {
  const seconds = slow.seconds ?? 0.3;
  if (!Number.isFinite(seconds) || seconds < 0) throw new Error(`withSlowRows: bad seconds ${seconds}`);
  return withRowTrigger(db, { ...slow, statements: `PERFORM pg_sleep(${seconds});` }, () => work());
}

/**
 * Runs `work` while every `on` statement on the rows of `table` matching `when` fails inside its
 * transaction, as a metadata error at that point would.
 */
export function withFailingRows<T>(db: Db, failing: RowWrites, work: () => Promise<T>): Promise<T> {
  return withRowTrigger(db, { ...failing, statements: `RAISE EXCEPTION 'simulated metadata failure';` }, () => work());
}

/**
 * Waits until a write on this database is asleep in a slow-rows trigger (its statement starting
 * with `statement`, when given): the race window is open. Fails after 5 s.
 */
export async function untilAsleep(db: Db, statement = ''): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const rows = (await db.query(
      `SELECT 1 FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event = 'PgSleep' AND starts_with(query, $1)`,
      [statement],
    )) as unknown[];
    if (rows.length) return;
    if (Date.now() > deadline) throw new Error(`no write asleep in a slow-rows trigger (${statement || 'any'}) in 5 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Runs `work` while every `on` statement on the rows of `table` matching `when` waits, inside its
 * transaction, until `work` calls `open` (or ends): a race window held open for exactly as long as
 * the test needs, however slow the machine, where withSlowRows's sleep could end too soon. The gate is
 * an advisory lock held by a session of its own; untilGated tells when a write waits at it.
 */
export async function withGatedRows<T>(
  dataSource: DataSource,
  writes: RowWrites,
  work: (gate: { open: () => Promise<void>; untilGated: () => Promise<void> }) => Promise<T>,
): Promise<T> {
  const key = randomBytes(6).readUIntBE(0, 6);
  const holder = dataSource.createQueryRunner();
  await holder.connect();
  let opened = false;
  const open = async () => {
    if (opened) return;
    opened = true;
    await holder.query('SELECT pg_advisory_unlock($1)', [key]);
  };
  try {
    await holder.query('SELECT pg_advisory_lock($1)', [key]);
    return await withRowTrigger(dataSource, { ...writes, statements: `PERFORM pg_advisory_xact_lock(${key});` }, () =>
      work({
        open,
        untilGated: () =>
          untilWaiting(
            dataSource,
            `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                AND classid = ${Math.floor(key / 2 ** 32)} AND objid = ${key % 2 ** 32}`,
          ),
      }),
    );
  } finally {
    await open().catch(() => undefined);
    await holder.release();
  }
}

/** Resolves once `probe` (a query) returns a row; fails after 5 s. */
async function untilWaiting(db: Db, probe: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (((await db.query(probe)) as unknown[]).length === 0) {
    if (Date.now() > deadline) throw new Error('no write waits at the gate after 5 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
