import { Client } from 'pg';

/**
 * Row count and checksum of every table of a metadata database, computed in SQL: the md5 of each
 * table's rows (as text) in a fixed order. Two snapshots are equal exactly when no row was added,
 * removed or changed. No table is left out: with the queues paused and the periodic loops off,
 * nothing but the requests writes to the fuzzed database.
 */
export class TableChecksums {
  private query?: string;

  constructor(private readonly db: Client) {}

  static async connect(databaseUrl: string): Promise<TableChecksums> {
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    return new TableChecksums(db);
  }

  async snapshot(): Promise<Record<string, string>> {
    this.query ??= await this.buildQuery();
    const { rows } = await this.db.query<{ name: string; n: string; sum: string }>(this.query);
    return Object.fromEntries(rows.map((r) => [r.name, `${r.n} rows, md5 ${r.sum}`]));
  }

  /** The tables whose snapshot differs, with before and after. */
  static changes(before: Record<string, string>, after: Record<string, string>): string[] {
    const names = new Set([...Object.keys(before), ...Object.keys(after)]);
    return [...names]
      .filter((name) => before[name] !== after[name])
      .map((name) => `${name}: ${before[name] ?? 'absent'} -> ${after[name] ?? 'absent'}`);
  }

  close(): Promise<void> {
    return this.db.end();
  }

  private async buildQuery(): Promise<string> {
    const { rows } = await this.db.query<{ schema: string; name: string }>(
      `SELECT table_schema AS schema, table_name AS name FROM information_schema.tables
        WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')
        ORDER BY 1, 2`,
    );
    if (!rows.length) throw new Error('no tables to checksum');
    return rows
      .map(({ schema, name }) => {
        const table = `${this.db.escapeIdentifier(schema)}.${this.db.escapeIdentifier(name)}`;
        return `SELECT ${this.db.escapeLiteral(`${schema}.${name}`)} AS name, count(*) AS n,
                  md5(coalesce(string_agg(r::text, E'\\n' ORDER BY r::text), '')) AS sum FROM ${table} r`;
      })
      .join('\nUNION ALL\n');
  }
}
