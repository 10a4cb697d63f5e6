import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager, Repository } from 'typeorm';
import { ErrorCode } from '../common/errors/error-code';
import { AppConfig } from '../config/app-config';
import { CREATABLE_REGIONS, type Region } from '../config/regions';
import { DataPlane } from '../data-plane/data-plane.service';
import { physicalDatabaseName } from '../data-plane/physical-names';
import { JobDispatcher } from '../queues/job-dispatcher';
import { Queues } from '../queues/queue-names';
import { DatabaseJobs, refillPoolJobId } from './database-jobs';
import { PooledDatabaseEntity } from './pooled-database.entity';

/**
 * The warm pool: per creatable region, DATABASE_POOL_TARGET pre-built, unassigned physical
 * databases (status POOLED in operators' terms; rows of `pooled_databases`). A create takes a ready
 * one inside its transaction and is READY in that request; a job builds replacements. A target of
 * 0 turns the pool off: nothing is taken from it and nothing is built.
 */
@Injectable()
export class WarmPool {
  private readonly logger = new Logger(WarmPool.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(PooledDatabaseEntity) private readonly pooled: Repository<PooledDatabaseEntity>,
    private readonly config: AppConfig,
    private readonly dataPlane: DataPlane,
    private readonly jobs: JobDispatcher,
  ) {}

  get target(): number {
    return this.config.env.DATABASE_POOL_TARGET;
  }

  /**
   * Takes a ready pooled database of the region within the caller's transaction (its row is
   * deleted there, so a rolled-back create gives it back). Concurrent creates skip each other's picks.
   */
  async claim(manager: EntityManager, region: Region): Promise<string | null> {
    const entry = await manager
      .getRepository(PooledDatabaseEntity)
      .createQueryBuilder('p')
      .setLock('pessimistic_write')
      .setOnLocked('skip_locked')
      .where('p.region = :region AND p.ready = true', { region })
      .orderBy('p.created', 'ASC')
      .addOrderBy('p.id', 'ASC')
      .limit(1)
      .getOne();
    if (!entry) return null;
    await manager.getRepository(PooledDatabaseEntity).delete({ id: entry.id });
    return entry.physicalName;
  }

  async requestRefill(region: Region): Promise<void> {
    if (this.target <= 0) return;
    await this.jobs.dispatch(
      Queues.DatabaseLifecycle,
      DatabaseJobs.RefillPool,
      { region },
      { jobId: refillPoolJobId(region) },
    );
  }

  async requestRefillEverywhere(): Promise<void> {
    for (const region of CREATABLE_REGIONS) await this.requestRefill(region);
  }

  /**
   * Brings the region's pool up to the target: finishes entries a crash left half-built, then
   * builds new ones. A failed build is cleaned up and recorded on its row; the job retries.
   *
   * Refills of one region take turns (Bull may re-run a stalled refill while the first run is still
   * going): the whole refill runs on one metadata connection holding a session-level advisory lock
   * for the region, so a run never builds, or cleans up after, an entry another run is working on
   * (and then drops a database that run has marked ready). A waiting run starts once the other is
   * done and finds the pool full. Every metadata write of a run goes through that connection, so a
   * run whose connection (and with it the lock) is lost cannot mark anything ready, and records a
   * failure before it drops the half-made database.
   */
  async refill(region: Region): Promise<void> {
    if (this.target <= 0) return;
    await this.exclusively(region, async (manager) => {
      const pooled = manager.getRepository(PooledDatabaseEntity);
      for (const entry of await pooled.find({ where: { region, ready: false }, order: { created: 'ASC' } })) {
        await this.build(pooled, entry);
      }
      let count = await pooled.countBy({ region });
      while (count < this.target) {
        const id = randomUUID();
        const entry = await pooled.save(
          pooled.create({
            id,
            region,
            physicalName: physicalDatabaseName(this.config.env.DATA_PLANE_NAME_PREFIX, id),
            ready: false,
            lastError: null,
          }),
        );
        await this.build(pooled, entry);
        count = await pooled.countBy({ region });
      }
    });
  }

  /** Ready entries per region (for operators and tests). */
  async readyCount(region: Region): Promise<number> {
    return this.pooled.countBy({ region, ready: true });
  }

  /** Runs `work` on one metadata connection holding the region's refill lock (see refill). */
  private async exclusively(region: Region, work: (manager: EntityManager) => Promise<void>): Promise<void> {
    const key = `warm-pool-refill:${region}`;
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    try {
      await runner.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [key]);
      try {
        await work(runner.manager);
      } finally {
        await runner.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [key]).catch(() => undefined);
      }
    } finally {
      await runner.release();
    }
  }

  private async build(pooled: Repository<PooledDatabaseEntity>, entry: PooledDatabaseEntity): Promise<void> {
    try {
      await this.dataPlane.buildDatabase(entry.region, entry.physicalName);
      if (!(await this.dataPlane.isDatabaseHardened(entry.region, entry.physicalName))) {
        throw new Error('the built database failed verification (owner or CONNECT privilege wrong)');
      }
      await pooled.update({ id: entry.id }, { ready: true, lastError: null });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.logger.error(
        { errorCode: ErrorCode.DbCreationFailure, region: entry.region, pooledId: entry.id, err: message },
        'warm-pool database could not be built',
      );
      // Recorded on the locked connection first: if that fails, the lock may be gone and another
      // run may own the entry now, so its database is left alone (a later refill finishes it).
      await pooled.update({ id: entry.id }, { lastError: message });
      await this.dataPlane.dropDatabase(entry.region, entry.physicalName).catch(() => undefined);
      throw err;
    }
  }
}
