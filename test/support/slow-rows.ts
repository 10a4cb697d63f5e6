import { randomBytes } from 'node:crypto';

/** Which row writes wait, and how long. */
export interface SlowRows {
  table: string;
  on: 'INSERT' | 'UPDATE' | 'DELETE';
  /** The trigger's WHEN condition on NEW./OLD. columns, so that only the test's own rows wait. */
  when: string;
  /** How long each matching write waits; 0.3 s unless told. */
  seconds?: number;
}

/**
 * Runs `work` while every `on` statement on the rows of `table` matching `when` sleeps `seconds`
 * inside its transaction, after whatever the code read before it. Requests that do not take turns
 * (on a lock, a row lock, a conditional write) therefore all read the state before any of them
 * writes: the race window is open on every run, not by luck, and only the code's own ordering
 * makes the later ones see the earlier ones' outcome. The trigger and its function are dropped
 * afterwards, whatever happened.
 */
export async function withSlowRows<T>(
  db: { query(sql: string, params?: unknown[]): Promise<unknown> },
  slow: SlowRows,
  work: () => Promise<T>,
): Promise<T> {
  const seconds = slow.seconds ?? 0.3;
  if (!Number.isFinite(seconds) || seconds < 0) throw new Error(`withSlowRows: bad seconds ${seconds}`);
  const name = `slow_rows_${randomBytes(4).toString('hex')}`;
  await db.query(
    `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN PERFORM pg_sleep(${seconds}); IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW; END $$`,
  );
  try {
    await db.query(
      `CREATE TRIGGER ${name} BEFORE ${slow.on} ON ${slow.table} FOR EACH ROW
         WHEN (${slow.when}) EXECUTE FUNCTION ${name}()`,
    );
    try {
      return await work();
    } finally {
      await db.query(`DROP TRIGGER ${name} ON ${slow.table}`);
    }
  } finally {
    await db.query(`DROP FUNCTION ${name}()`);
  }
}
