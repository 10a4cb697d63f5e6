import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, In, IsNull, LessThanOrEqual, Not, Repository } from 'typeorm';
import { ErrorCode } from '../common/errors/error-code';
import { DataPlane } from '../data-plane/data-plane.service';
import { JobDispatcher } from '../queues/job-dispatcher';
import { Queues } from '../queues/queue-names';
import { Reconciler } from '../queues/reconciler';
import { DatabaseFinalizers } from './database-finalizers';
import { DatabaseJobs, provisionJobId } from './database-jobs';
import { DatabaseEntity, DatabaseStatus } from './database.entity';
import { WarmPool } from './warm-pool.service';
import { messageOf } from '../common/errors/message-of';

const SWEEP_BATCH = 500;

type Outcome = { ok: true } | { ok: false; error: unknown };

/**
 * Moves databases through their life on the data plane: REQUESTED -> (build) -> BUILT ->
 * (verify) -> READY, and deleted -> (grace period) -> finalized. Each step runs with the database
 * row locked, so a build and a finalization of one database never overlap, and each step is
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
   */
  async provision(databaseId: string): Promise<void> {
    const built = await this.locked(databaseId, async (row, manager): Promise<Outcome> => {
      if (row.deleted || row.status !== DatabaseStatus.Requested) return { ok: true };
      const attempt = row.provisionAttempts + 1;
      try {
        await this.dataPlane.buildDatabase(row.region, row.physicalName, { sharded: row.sharded });
        await manager.update(
          DatabaseEntity,
          { id: row.id },
          { status: DatabaseStatus.Built, lastError: null, provisionAttempts: attempt },
        );
        return { ok: true };
      } catch (error) {
        await this.dataPlane
          .dropDatabase(row.region, row.physicalName)
          .catch((cleanup: unknown) =>
            this.logger.error({ databaseId, err: messageOf(cleanup) }, 'could not remove a half-made database'),
          );
        await manager.update(
          DatabaseEntity,
          { id: row.id },
          { lastError: messageOf(error), provisionAttempts: attempt },
        );
        this.logger.error(
          { errorCode: ErrorCode.DbCreationFailure, databaseId, region: row.region, attempt, err: messageOf(error) },
          'database could not be built; will retry',
        );
        return { ok: false, error };
      }
    });
    if (built && !built.ok) throw built.error;

    const verified = await this.locked(databaseId, async (row, manager): Promise<Outcome> => {
      if (row.deleted || row.status !== DatabaseStatus.Built) return { ok: true };
      if (await this.dataPlane.isDatabaseHardened(row.region, row.physicalName)) {
        await manager.update(DatabaseEntity, { id: row.id }, { status: DatabaseStatus.Ready, lastError: null });
        return { ok: true };
      }
      const error = new Error('the built database failed verification (missing, wrong owner or open to PUBLIC)');
      await manager.update(
        DatabaseEntity,
        { id: row.id },
        { status: DatabaseStatus.Requested, lastError: error.message },
      );
      this.logger.error(
        { errorCode: ErrorCode.DbCreationFailure, databaseId, region: row.region, err: error.message },
        'database failed verification; rebuilding',
      );
      return { ok: false, error };
    });
    if (verified && !verified.ok) throw verified.error;
  }

  /**
   * Finalizes a deletion whose grace period has passed: terminates its sessions, drops the physical
   * database, its credential roles and its owner role, lets other modules finish (credentials,
   * compute), and marks the row finalized; the row stays as a tombstone for billing history.
   * Returns false when there was nothing (yet) to do. Idempotent.
   */
  async finalize(databaseId: string, now = new Date()): Promise<boolean> {
    const done = await this.locked(databaseId, async (row, manager) => {
      if (!row.deleted || row.finalized) return false;
      if (row.deletionDueAt && row.deletionDueAt.getTime() > now.getTime()) return false;
      await this.dataPlane.dropDatabase(row.region, row.physicalName);
      await this.finalizers.runAll(row, manager);
      await manager.update(DatabaseEntity, { id: row.id }, { finalized: new Date() });
      return true;
    });
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
      await this.jobs.redispatch(
        Queues.DatabaseLifecycle,
        DatabaseJobs.Provision,
        { databaseId: id },
        { jobId: provisionJobId(id) },
      );
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
