import { Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { EntityManager, Repository } from 'typeorm';
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
   */
  async refill(region: Region): Promise<void> {
    if (this.target <= 0) return;
    for (const entry of await this.pooled.find({ where: { region, ready: false }, order: { created: 'ASC' } })) {
      await this.build(entry);
    }
    let count = await this.pooled.countBy({ region });
    while (count < this.target) {
      const id = randomUUID();
      const entry = await this.pooled.save(
        this.pooled.create({
          id,
          region,
          physicalName: physicalDatabaseName(this.config.env.DATA_PLANE_NAME_PREFIX, id),
          ready: false,
          lastError: null,
        }),
      );
      await this.build(entry);
      count = await this.pooled.countBy({ region });
    }
  }

  /** Ready entries per region (for operators and tests). */
  async readyCount(region: Region): Promise<number> {
    return this.pooled.countBy({ region, ready: true });
  }

  private async build(entry: PooledDatabaseEntity): Promise<void> {
    try {
      await this.dataPlane.buildDatabase(entry.region, entry.physicalName);
      if (!(await this.dataPlane.isDatabaseHardened(entry.region, entry.physicalName))) {
        throw new Error('the built database failed verification (owner or CONNECT privilege wrong)');
      }
      await this.pooled.update({ id: entry.id }, { ready: true, lastError: null });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.logger.error(
        { errorCode: ErrorCode.DbCreationFailure, region: entry.region, pooledId: entry.id, err: message },
        'warm-pool database could not be built',
      );
      await this.dataPlane.dropDatabase(entry.region, entry.physicalName).catch(() => undefined);
      await this.pooled.update({ id: entry.id }, { lastError: message });
      throw err;
    }
  }
}
