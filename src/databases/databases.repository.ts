import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, In, IsNull, Not, type Repository } from 'typeorm';
import { type PreparedRead, readRows } from '../database/hot-query';
import { MetadataTransactions } from '../database/metadata-transactions';
import { lockForContextTransaction } from '../database/transaction-lock';
import type { Region } from '../config/regions';
import { DataPlaneServerState } from '../data-plane/data-plane-server.entity';
import { type DataPlaneServerView, viewOf } from '../data-plane/data-plane-servers.service';
import { DATABASE_COLUMNS, type DatabaseRow, toDatabase } from './database-rows';
import { DatabaseEntity, DatabaseStatus } from './database.entity';
import { deletionDueOf } from './deletion-due';

/** The hot reads below, kept prepared on each pool connection (PreparedRead). */
const IDS_OF_WORKSPACES: PreparedRead = {
  name: 'database_ids_of_workspaces',
  text: `SELECT id, workspace_id FROM databases
          WHERE workspace_id = ANY($1::uuid[]) AND deleted IS NULL
          ORDER BY created ASC, id ASC`,
};
const OPERABLE_DATABASE: PreparedRead = {
  name: 'database_operable',
  text: `SELECT ${DATABASE_COLUMNS} FROM databases
          WHERE workspace_id = $1 AND name = $2 AND finalized IS NULL
          ORDER BY deleted DESC NULLS FIRST LIMIT 1`,
};

/** A workspace's databases that hold a place on a server (DatabasesRepository.countPlaced). */
export interface PlacedDatabases {
  live: number;
  /** Queued for deletion, not yet finalized (however late). */
  queued: number;
  /** When the first of those is (or was) due to be finalized (deletionDueOf; null when none is queued). */
  firstDueAt: Date | null;
}

/** How full a server is: customer databases not yet finalized, and warm-pool entries. */
export interface ServerUsage {
  databases: number;
  pooled: number;
}

/** A server's usage (ServerUsage) as the columns `databases` and `pooled`, for the server whose id is `id`. */
const USAGE_OF_SERVER = (id: string) =>
  `(SELECT count(*) FROM databases d WHERE d.server_id = ${id} AND d.finalized IS NULL)::int AS databases,
   (SELECT count(*) FROM pooled_databases p WHERE p.server_id = ${id})::int AS pooled`;

/**
 * Row lock modes (TypeORM's names). FOR NO KEY UPDATE conflicts with the modes here, FOR SHARE
 * included, but not with the FOR KEY SHARE of foreign-key checks: rows that reference the database
 * can still be written while it is held.
 */
const ROW_LOCKS = {
  pessimistic_write: 'FOR UPDATE',
  for_no_key_update: 'FOR NO KEY UPDATE',
  pessimistic_read: 'FOR SHARE',
} as const;
export type RowLockMode = keyof typeof ROW_LOCKS;

/**
 * Every statement on `databases` (habit 15). Statements go through the transaction the context
 * carries (MetadataTransactions: inside its withTransaction they join it, outside they run on
 * their own), except the raw hot reads, which run on the pool itself
 * (readRows) and never inside a transaction.
 */
@Injectable()
export class DatabasesRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly txHost: MetadataTransactions,
  ) {}

  private get repo(): Repository<DatabaseEntity> {
    return this.txHost.tx.getRepository(DatabaseEntity);
  }

  /** Takes the advisory locks named by `keys` (in that order, one round trip) for the rest of the context's transaction. */
  lockKeys(...keys: string[]): Promise<void> {
    return lockForContextTransaction(this.txHost, ...keys);
  }

  /** Locks the row (in one of ROW_LOCKS' modes) for the rest of the context's transaction (refused outside one). */
  async lock(id: string, mode: RowLockMode): Promise<DatabaseEntity | null> {
    const [row] = await this.txHost
      .required('a database row lock')
      .query<DatabaseRow[]>(`SELECT ${DATABASE_COLUMNS} FROM databases WHERE id = $1 ${ROW_LOCKS[mode]}`, [id]);
    return row ? toDatabase(row) : null;
  }

  /** Inserts a new database (raw: no look-up of the new id as `save` does, no query building). */
  async insert(
    row: Pick<
      DatabaseEntity,
      'id' | 'workspaceId' | 'name' | 'region' | 'serverId' | 'sharded' | 'status' | 'physicalName'
    >,
  ): Promise<DatabaseEntity> {
    const [inserted] = await this.txHost.tx.query<DatabaseRow[]>(
      `INSERT INTO databases (id, workspace_id, name, region, server_id, sharded, status, physical_name)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${DATABASE_COLUMNS}`,
      [row.id, row.workspaceId, row.name, row.region, row.serverId, row.sharded, row.status, row.physicalName],
    );
    return toDatabase(inserted);
  }

  countLive(workspaceId: string): Promise<number> {
    return this.repo.countBy({ workspaceId, deleted: IsNull() });
  }

  /**
   * The workspace's databases that still hold a place on a server: live ones, and those queued for
   * deletion with the first one's due time. Each count reads its own partial index (no tombstones).
   */
  async countPlaced(workspaceId: string): Promise<PlacedDatabases> {
    const [row] = await this.txHost.tx.query<{ live: number; queued: number; first_due: Date | null }[]>(
      `SELECT (SELECT count(*) FROM databases WHERE workspace_id = $1 AND deleted IS NULL)::int AS live,
              q.queued, q.first_due
         FROM (SELECT count(*)::int AS queued, min(coalesce(deletion_due_at, deleted)) AS first_due FROM databases
                WHERE workspace_id = $1 AND deleted IS NOT NULL AND finalized IS NULL) q`,
      [workspaceId],
    );
    return { live: row.live, queued: row.queued, firstDueAt: row.first_due };
  }

  /** The workspace's live databases, oldest first, up to `take`, after the database `cursor` (when given). */
  pageOfLive(workspaceId: string, take: number, cursor?: string): Promise<DatabaseEntity[]> {
    const query = this.repo
      .createQueryBuilder('d')
      .where('d.workspace_id = :workspaceId AND d.deleted IS NULL', { workspaceId })
      .orderBy('d.created', 'ASC')
      .addOrderBy('d.id', 'ASC')
      .limit(take);
    if (cursor) {
      query.andWhere('(d.created, d.id) > (SELECT c.created, c.id FROM databases c WHERE c.id = :cursor)', { cursor });
    }
    return query.getMany();
  }

  async existsIn(id: string, workspaceId: string): Promise<boolean> {
    return !!(await this.repo.findOne({ select: { id: true }, where: { id, workspaceId } }));
  }

  findById(id: string): Promise<DatabaseEntity | null> {
    return this.repo.findOneBy({ id });
  }

  findLiveIn(id: string, workspaceId: string): Promise<DatabaseEntity | null> {
    return this.repo.findOneBy({ id, workspaceId, deleted: IsNull() });
  }

  findUnfinalizedIn(id: string, workspaceId: string): Promise<DatabaseEntity | null> {
    return this.repo.findOneBy({ id, workspaceId, finalized: IsNull() });
  }

  findUnfinalizedWithWorkspace(id: string): Promise<DatabaseEntity | null> {
    return this.repo.findOne({ where: { id, finalized: IsNull() }, relations: { workspace: true } });
  }

  /** For those of `ids` queued for deletion (finalized ones included): when the deletion is (or was) due. */
  async deletionDueTimes(ids: string[]): Promise<Map<string, Date>> {
    if (!ids.length) return new Map();
    const rows = await this.repo.find({
      select: { id: true, deleted: true, deletionDueAt: true },
      where: { id: In(ids), deleted: Not(IsNull()) },
    });
    return new Map(rows.map((row) => [row.id, deletionDueOf(row)!]));
  }

  existsLiveNamed(workspaceId: string, name: string): Promise<boolean> {
    return this.repo.existsBy({ workspaceId, name, deleted: IsNull() });
  }

  /** Renames the row while it is live (and, when `name` is given, still named so); how many rows changed. */
  async renameIfLive(id: string, name: string | undefined, newName: string): Promise<number> {
    return (
      (await this.repo.update({ id, ...(name === undefined ? {} : { name }), deleted: IsNull() }, { name: newName }))
        .affected ?? 0
    );
  }

  /** Queues the row for deletion while it is live (and, when `name` is given, still named so); how many rows changed. */
  async markDeletedIfNamed(id: string, name: string | undefined, deleted: Date, deletionDueAt: Date): Promise<number> {
    return (
      (
        await this.repo.update(
          { id, ...(name === undefined ? {} : { name }), deleted: IsNull() },
          { deleted, deletionDueAt },
        )
      ).affected ?? 0
    );
  }

  /** Queues the row for deletion due now while it is live in the workspace; how many rows changed. */
  async markDeletedNowIfIn(id: string, workspaceId: string, now: Date): Promise<number> {
    return (
      (await this.repo.update({ id, workspaceId, deleted: IsNull() }, { deleted: now, deletionDueAt: now })).affected ??
      0
    );
  }

  /** Moves the row to `toWorkspaceId` while it is live in `fromWorkspaceId`; how many rows changed. */
  async moveToWorkspaceIfLiveIn(id: string, fromWorkspaceId: string, toWorkspaceId: string): Promise<number> {
    return (
      (await this.repo.update({ id, workspaceId: fromWorkspaceId, deleted: IsNull() }, { workspaceId: toWorkspaceId }))
        .affected ?? 0
    );
  }

  /**
   * Ids of the live databases of each of these workspaces, oldest first. Raw rows of two columns
   * on the pool: a developer may see 100k databases, which entities would cost seconds to build.
   */
  idsOfWorkspaces(workspaceIds: string[]): Promise<{ id: string; workspace_id: string }[]> {
    return readRows<{ id: string; workspace_id: string }>(this.dataSource, IDS_OF_WORKSPACES, [workspaceIds]);
  }

  /**
   * The database operations on `name` act on: the live one, else the latest deleted one not yet
   * finalized. On every operation on a database: one indexed statement, raw rows, on the pool.
   */
  async findOperable(workspaceId: string, name: string): Promise<DatabaseEntity | null> {
    const [row] = await readRows<DatabaseRow>(this.dataSource, OPERABLE_DATABASE, [workspaceId, name]);
    return row ? toDatabase(row) : null;
  }

  /** The row by id, whatever its state (one raw statement on the pool); null when there is none. */
  async readById(id: string): Promise<DatabaseEntity | null> {
    const [row] = await readRows<DatabaseRow>(
      this.dataSource,
      `SELECT ${DATABASE_COLUMNS} FROM databases WHERE id = $1`,
      [id],
    );
    return row ? toDatabase(row) : null;
  }

  /** Server and physical name of every database not finalized (the orphan-role sweep's, raw rows). */
  livePlacements(): Promise<{ server_id: string; physical_name: string }[]> {
    return readRows<{ server_id: string; physical_name: string }>(
      this.dataSource,
      'SELECT server_id, physical_name FROM databases WHERE finalized IS NULL AND server_id IS NOT NULL',
      [],
    );
  }

  /**
   * Servers holding READY databases not finalized, oldest first (the telemetry schedule's read, once
   * an interval): one probe of IDX_databases_unfinalized_by_server per server (the LIMIT keeps the
   * planner from turning it into a join over the fleet), not a read of the fleet. The status is a
   * literal, here and below, so the planner matches the partial index's predicate.
   */
  async serversWithUsable(): Promise<string[]> {
    const rows = await readRows<{ id: string }>(
      this.dataSource,
      `SELECT s.id FROM data_plane_servers s
        CROSS JOIN LATERAL (SELECT 1 FROM databases d
                             WHERE d.server_id = s.id AND d.status = '${DatabaseStatus.Ready}' AND d.finalized IS NULL
                             LIMIT 1) usable
        ORDER BY s.created, s.id`,
      [],
    );
    return rows.map((r) => r.id);
  }

  /** Physical names of up to `limit` of the server's READY databases not finalized. */
  async readyPhysicalNamesOn(serverId: string, limit: number): Promise<string[]> {
    const rows = await this.txHost.tx.query<{ physical_name: string }[]>(
      `SELECT physical_name FROM databases
        WHERE server_id = $1 AND status = '${DatabaseStatus.Ready}' AND finalized IS NULL
        ORDER BY created, id LIMIT $2`,
      [serverId, limit],
    );
    return rows.map((r) => r.physical_name);
  }

  /**
   * The server's READY databases not finalized, oldest first (a telemetry pass's read, once per
   * server and interval): raw rows of the four columns a pass needs, in the order of
   * IDX_databases_unfinalized_by_server (no sort, no tombstones read).
   */
  usableOnServer(
    serverId: string,
  ): Promise<{ id: string; workspace_id: string; physical_name: string; created: Date }[]> {
    return readRows<{ id: string; workspace_id: string; physical_name: string; created: Date }>(
      this.dataSource,
      `SELECT id, workspace_id, physical_name, created FROM databases
        WHERE server_id = $1 AND status = '${DatabaseStatus.Ready}' AND finalized IS NULL
        ORDER BY created, id`,
      [serverId],
    );
  }

  /**
   * Records a verified build: READY, unless the row moved on meanwhile (made READY by another run,
   * or finalized: then nothing changes, and the answer is false). One raw statement: it sits on the
   * path from create to READY.
   */
  async markReady(id: string, provisionAttempts: number): Promise<boolean> {
    const [, affected] = await this.txHost.tx.query<[unknown, number]>(
      `UPDATE databases SET status = $3, last_error = NULL, provision_attempts = $2, updated = now()
        WHERE id = $1 AND status IN ($4, $5) AND finalized IS NULL`,
      [id, provisionAttempts, DatabaseStatus.Ready, DatabaseStatus.Requested, DatabaseStatus.Built],
    );
    return affected > 0;
  }

  /** Records a failed attempt (the status unchanged); only while the row has `status`, when given. */
  async recordAttemptFailure(
    id: string,
    lastError: string,
    provisionAttempts: number,
    status?: DatabaseStatus,
  ): Promise<void> {
    await this.repo.update(status ? { id, status } : { id }, { lastError, provisionAttempts });
  }

  /** A build that failed verification: back to REQUESTED with the error, unless the row moved on. */
  async markUnverified(id: string, lastError: string, provisionAttempts: number): Promise<void> {
    await this.repo.update(
      { id, status: In([DatabaseStatus.Requested, DatabaseStatus.Built]) },
      { status: DatabaseStatus.Requested, lastError, provisionAttempts },
    );
  }

  async markFinalized(id: string, at: Date): Promise<void> {
    await this.repo.update({ id }, { finalized: at });
  }

  /**
   * Ids of builds owed (REQUESTED or BUILT, not finalized, and not deleted with the deletion due): at
   * most `take`, taken from the servers in turn (each server's oldest, then each server's second
   * oldest, …), so builds stuck on one server (one that does not answer) never keep another's out of
   * a batch. Reads IDX_databases_unbuilt_by_server, no tombstones.
   */
  async unbuiltInTurnByServer(take: number): Promise<string[]> {
    const rows = await this.txHost.tx.query<{ id: string }[]>(
      `SELECT id
         FROM (SELECT id, created, row_number() OVER (PARTITION BY server_id ORDER BY created, id) AS turn
                 FROM databases
                WHERE status IN ('${DatabaseStatus.Requested}', '${DatabaseStatus.Built}') AND finalized IS NULL
                  AND (deleted IS NULL OR deletion_due_at > now())) owed
        ORDER BY turn, created, id
        LIMIT $1`,
      [take],
    );
    return rows.map((r) => r.id);
  }

  /**
   * Deletions due by `now` and not finalized, with their server: at most `take`, taken from the
   * servers in turn (each server's most overdue, then each server's second most overdue, …), so a
   * backlog on one server (one that does not answer) never keeps another's deletions out of a batch.
   */
  overdueInTurnByServer(now: Date, take: number): Promise<{ id: string; serverId: string | null }[]> {
    return this.txHost.tx.query(
      `SELECT id, server_id AS "serverId"
         FROM (SELECT id, server_id, deletion_due_at,
                      row_number() OVER (PARTITION BY server_id ORDER BY deletion_due_at, id) AS turn
                 FROM databases
                WHERE deleted IS NOT NULL AND finalized IS NULL AND deletion_due_at <= $1) overdue
        ORDER BY turn, deletion_due_at, id
        LIMIT $2`,
      [now, take],
    );
  }

  /**
   * The region's ACTIVE servers, oldest first, each with its usage: placement's read, one statement,
   * in the transaction the context carries.
   */
  async activeServersWithUsage(region: Region): Promise<{ server: DataPlaneServerView; usage: ServerUsage }[]> {
    const rows = await this.txHost.tx.query<(DataPlaneServerView & ServerUsage)[]>(
      `SELECT s.id, s.region, s.public_host AS "publicHost", s.max_databases AS "maxDatabases", s.state,
              s.created, s.updated, ${USAGE_OF_SERVER('s.id')}
         FROM data_plane_servers s
        WHERE s.region = $1 AND s.state = $2
        ORDER BY s.created ASC, s.id ASC`,
      [region, DataPlaneServerState.Active],
    );
    return rows.map((r) => ({ server: viewOf(r), usage: { databases: r.databases, pooled: r.pooled } }));
  }

  /** The usage of each server named (in the context's transaction, if any). */
  async usageByServer(serverIds: string[]): Promise<Map<string, ServerUsage>> {
    if (!serverIds.length) return new Map();
    const rows = await this.txHost.tx.query<({ id: string } & ServerUsage)[]>(
      `SELECT s.id, ${USAGE_OF_SERVER('s.id')} FROM unnest($1::uuid[]) AS s(id)`,
      [serverIds],
    );
    return new Map(rows.map((r) => [r.id, { databases: r.databases, pooled: r.pooled }]));
  }

  /**
   * Attaches rows without a server (`databases` or `pooled_databases`, from before the fleet) to
   * the first server of their region; how many. Finalized databases are left alone: they need no
   * server, and one let go by a removed server (detachFinalized) never lived on the one chosen here.
   */
  async attachUnplaced(table: 'databases' | 'pooled_databases'): Promise<number> {
    const [, count] = await this.txHost.tx.query<[unknown, number]>(
      `UPDATE ${table} t SET server_id = (
          SELECT s.id FROM data_plane_servers s WHERE s.region = t.region ORDER BY s.created, s.id LIMIT 1)
        WHERE t.server_id IS NULL ${table === 'databases' ? 'AND t.finalized IS NULL' : ''}
          AND EXISTS (SELECT 1 FROM data_plane_servers s WHERE s.region = t.region)`,
    );
    return count;
  }

  /** Locks the server's databases not yet finalized for the rest of the context's transaction (refused outside one). */
  async lockUnfinalizedOn(serverId: string): Promise<DatabaseEntity[]> {
    const rows = await this.txHost
      .required('locking a server’s databases')
      .query<DatabaseRow[]>(
        `SELECT ${DATABASE_COLUMNS} FROM databases WHERE server_id = $1 AND finalized IS NULL ORDER BY id FOR UPDATE`,
        [serverId],
      );
    return rows.map(toDatabase);
  }

  /**
   * Marks the rows deleted as of `at` (those queued for deletion keep when), due at `at` at the
   * latest and finalized at `at`: written off, their server lost.
   */
  async writeOff(ids: string[], at: Date): Promise<void> {
    await this.txHost.tx.query(
      `UPDATE databases SET deleted = coalesce(deleted, $2), deletion_due_at = least(coalesce(deletion_due_at, $2), $2),
              finalized = $2
        WHERE id = ANY($1::uuid[])`,
      [ids, at],
    );
  }

  /**
   * Lets the server's finalized databases (tombstones) go of it, in the transaction the context
   * carries (the server's removal): their rows stay as they are, without a server; how many.
   */
  async detachFinalized(serverId: string): Promise<number> {
    const [, count] = await this.txHost.tx.query<[unknown, number]>(
      'UPDATE databases SET server_id = NULL WHERE server_id = $1 AND finalized IS NOT NULL',
      [serverId],
    );
    return count;
  }
}
