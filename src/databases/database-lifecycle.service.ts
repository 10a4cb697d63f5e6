import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, In, IsNull, LessThanOrEqual, Not, Repository } from 'typeorm';
import { ErrorCode } from '../common/errors/error-code';
import { DataPlane } from '../data-plane/data-plane.service';
import { JobDispatcher } from '../queues/job-dispatcher';
import { Reconciler } from '../queues/reconciler';
import { DatabaseFinalizers } from './database-finalizers';
import { provisionJobId } from './database-jobs';
import { markReady, readDatabase } from './database-rows';
import { DatabaseEntity, DatabaseStatus } from './database.entity';
import { WarmPool } from './warm-pool.service';
import { messageOf } from '../common/errors/message-of';

const SWEEP_BATCH = 500;

/** The server a database lives on (every row has one once boot has attached rows from before the fleet). */
/** The data-plane lock under which one database's build and finalization take turns. */
const lockKey = (row: DatabaseEntity) => `database:${row.physicalName}`;

export function serverOf(row: Pick<DatabaseEntity, 'id' | 'serverId'>): string {
  if (!row.serverId) throw new Error(`database ${row.id} is not placed on a data-plane server`);
  return row.serverId;
}

type Outcome = { ok: true } | { ok: false; error: unknown };

/**
 * Moves databases through their life on the data plane: REQUESTED -> (build, verify) -> READY,
 * and deleted -> (grace period) -> finalized. A build and a finalization of one database take
 * turns under its advisory lock on its data-plane server, so they never overlap, and each step is
 * idempotent, so jobs that run twice or late change nothing the second time.
 */
@Injectable()
export class DatabaseLifecycle implements OnModuleInit {
  private readonly logger = new Logger(DatabaseLifecycle.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(DatabaseEntity) private readonly databases: Repository<DatabaseEntity>,
    private readonly dataPlane: DataPlane,
    private readonly jobs: JobDispatcher,
    private readonly reconciler: Reconciler,
    private readonly finalizers: DatabaseFinalizers,
    private readonly pool: WarmPool,
  ) {}

  onModuleInit(): void {
    this.reconciler.register('databases', () => this.sweep());
  }

  /**
   * Builds the physical database and hardens it (-> BUILT), then verifies it (-> READY). A failure
   * removes whatever was half-made, records the error on the row (status unchanged) and throws, so
   * the job retries with backoff; the sweep re-enqueues it after the attempts run out.
   *
   * No metadata transaction or row lock is open while the data plane works (habit 14): runs on one
   * database take turns under an advisory lock on its data-plane server (a run that finds it taken
   * leaves the work to the holder), and each outcome is recorded by a conditional update that
   * finds nothing to change when the row moved on meanwhile (deleted, or already further along).
   */
  async provision(databaseId: string): Promise<void> {
    const unbuilt = (r: DatabaseEntity | null): r is DatabaseEntity =>
      !!r && !r.deleted && !r.finalized && (r.status === DatabaseStatus.Requested || r.status === DatabaseStatus.Built);
    const row = await readDatabase(this.dataSource, databaseId);
    if (!unbuilt(row)) return;
    let outcome: Outcome | undefined;
    try {
      outcome = await this.dataPlane.exclusively(serverOf(row), lockKey(row), async (): Promise<Outcome> => {
        // Read again under the lock: another run may have built or finalized it meanwhile.
        const current = await readDatabase(this.dataSource, databaseId);
        return unbuilt(current) ? this.build(current) : { ok: true };
      });
    } catch (error) {
      // The server could not even be reached for the lock: recorded like a failed build.
      await this.databases.update(
        { id: row.id, status: row.status },
        { lastError: messageOf(error), provisionAttempts: row.provisionAttempts + 1 },
      );
      this.logger.error(
        { errorCode: ErrorCode.DbCreationFailure, databaseId, serverId: row.serverId, err: messageOf(error) },
        'data-plane server unreachable; will retry',
      );
      throw error;
    }
    if (outcome && !outcome.ok) throw outcome.error;
  }

  /**
   * Builds the database (idempotent: a row left BUILT by an earlier version is built again) and
   * records the outcome in one write: READY when the build verified (see
   * DataPlane.buildDatabase), back to REQUESTED with the error otherwise. A crash between the
   * build and that write leaves the row as it was, and the next run builds again.
   */
  private async build(row: DatabaseEntity): Promise<Outcome> {
    const attempt = row.provisionAttempts + 1;
    let hardened: boolean;
    try {
      hardened = await this.dataPlane.buildDatabase(serverOf(row), row.physicalName, { sharded: row.sharded });
    } catch (error) {
      await this.dataPlane
        .dropDatabase(serverOf(row), row.physicalName)
        .catch((cleanup: unknown) =>
          this.logger.error({ databaseId: row.id, err: messageOf(cleanup) }, 'could not remove a half-made database'),
        );
      await this.databases.update({ id: row.id }, { lastError: messageOf(error), provisionAttempts: attempt });
      this.logger.error(
        {
          errorCode: ErrorCode.DbCreationFailure,
          databaseId: row.id,
          region: row.region,
          serverId: row.serverId,
          attempt,
          err: messageOf(error),
        },
        'database could not be built; will retry',
      );
      return { ok: false, error };
    }
    if (hardened) {
      await markReady(this.dataSource, row.id, attempt);
      return { ok: true };
    }
    const error = new Error('the built database failed verification (missing, wrong owner or open to PUBLIC)');
    await this.databases.update(
      { id: row.id, status: In([DatabaseStatus.Requested, DatabaseStatus.Built]) },
      { status: DatabaseStatus.Requested, lastError: error.message, provisionAttempts: attempt },
    );
    this.logger.error(
      { errorCode: ErrorCode.DbCreationFailure, databaseId: row.id, region: row.region, err: error.message },
      'database failed verification; rebuilding',
    );
    return { ok: false, error };
  }

  /**
   * Finalizes a deletion whose grace period has passed: terminates its sessions, drops the physical
   * database, its credential roles and its owner role, lets other modules finish (credentials,
   * compute), and marks the row finalized; the row stays as a tombstone for billing history.
   * Returns false when there was nothing (yet) to do. Idempotent. The drop runs under the
   * database's data-plane lock (see provision) with no metadata transaction open; the bookkeeping
   * follows in one short transaction with the row locked.
   */
  async finalize(databaseId: string, now = new Date()): Promise<boolean> {
    const due = (row: DatabaseEntity | null): row is DatabaseEntity =>
      !!row?.deleted && !row.finalized && !(row.deletionDueAt && row.deletionDueAt.getTime() > now.getTime());
    const row = await this.databases.findOneBy({ id: databaseId });
    if (!due(row)) return false;
    const done = await this.dataPlane.exclusively(serverOf(row), lockKey(row), async () => {
      if (!due(await this.databases.findOneBy({ id: databaseId }))) return false;
      await this.dataPlane.dropDatabase(serverOf(row), row.physicalName);
      return this.locked(databaseId, async (current, manager) => {
        if (!due(current)) return false;
        await this.finalizers.runAll(current, manager);
        await manager.update(DatabaseEntity, { id: current.id }, { finalized: new Date() });
        return true;
      });
    });
    if (done === undefined) {
      throw new Error(`database ${databaseId} is being worked on by another run; finalization will retry`);
    }
    if (done) this.logger.log({ databaseId }, 'database deletion finalized');
    return done ?? false;
  }

  /**
   * One reconcile pass: re-enqueues builds that are not done (their job may be lost or out of
   * attempts), finalizes overdue deletions whose job was lost, and tops up the warm pool.
   */
  async sweep(now = new Date()): Promise<void> {
    const unbuilt = await this.databases.find({
      select: { id: true },
      where: { status: In([DatabaseStatus.Requested, DatabaseStatus.Built]), deleted: IsNull() },
      order: { created: 'ASC' },
      take: SWEEP_BATCH,
    });
    for (const { id } of unbuilt) {
      await this.jobs.redispatch('ProvisionDatabase', { databaseId: id }, { jobId: provisionJobId(id) });
    }
    const overdue = await this.databases.find({
      select: { id: true },
      where: { deleted: Not(IsNull()), finalized: IsNull(), deletionDueAt: LessThanOrEqual(now) },
      order: { deletionDueAt: 'ASC' },
      take: SWEEP_BATCH,
    });
    for (const { id } of overdue) {
      try {
        await this.finalize(id, now);
      } catch (err) {
        this.logger.error(
          { errorCode: ErrorCode.DbDeletionFailure, databaseId: id, err: messageOf(err) },
          'deletion could not be finalized; will retry',
        );
      }
    }
    await this.pool.requestRefillEverywhere();
  }

  /** Runs `work` with the database row locked (FOR UPDATE) in a transaction; undefined if there is no row. */
  private locked<T>(
    id: string,
    work: (row: DatabaseEntity, manager: EntityManager) => Promise<T>,
  ): Promise<T | undefined> {
    return this.dataSource.transaction(async (manager) => {
      const row = await manager
        .getRepository(DatabaseEntity)
        .createQueryBuilder('d')
        .setLock('pessimistic_write')
        .where('d.id = :id', { id })
        .getOne();
      return row ? work(row, manager) : undefined;
    });
  }
}
