import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { ErrorCode } from '../common/errors/error-code';
import { AppConfig } from '../config/app-config';
import { CREATABLE_REGIONS, type Region } from '../config/regions';
import { MetadataTransactions } from '../database/metadata-transactions';
import { DataPlaneServerState } from '../data-plane/data-plane-server.entity';
import { DataPlaneServers, type DataPlaneServerView } from '../data-plane/data-plane-servers.service';
import { DataPlane } from '../data-plane/data-plane.service';
import { physicalDatabaseName } from '../data-plane/physical-names';
import { JobDispatcher } from '../queues/job-dispatcher';
import { refillPoolJobId } from './database-jobs';
import { Placement } from './placement.service';
import type { PooledDatabaseEntity } from './pooled-database.entity';
import { PooledDatabasesRepository } from './pooled-databases.repository';
import { messageOf } from '../common/errors/message-of';

/**
 * The warm pool: per ACTIVE data-plane server of a creatable region, DATABASE_POOL_TARGET
 * pre-built, unassigned physical databases (status POOLED in operators' terms; rows of
 * `pooled_databases`), as far as the server has room. A create takes a ready one of the server it
 * places the database on inside its transaction and is READY in that request; a job builds
 * replacements. A server that stops being ACTIVE gives its pooled databases back (they are
 * dropped), and every server gives back what is above a lowered target. A target of 0 turns the
 * pool off: nothing is taken from it, nothing is built, and what was pooled is given back.
 */
@Injectable()
export class WarmPool {
  private readonly logger = new Logger(WarmPool.name);

  constructor(
    private readonly txHost: MetadataTransactions,
    private readonly pooled: PooledDatabasesRepository,
    private readonly config: AppConfig,
    private readonly dataPlane: DataPlane,
    private readonly servers: DataPlaneServers,
    private readonly placement: Placement,
    private readonly jobs: JobDispatcher,
  ) {}

  get target(): number {
    return this.config.env.DATABASE_POOL_TARGET;
  }

  /**
   * Takes a ready pooled database of the server within the transaction the context carries (its
   * row is deleted there, so a rolled-back create gives it back). Concurrent creates skip each
   * other's picks.
   */
  claim(serverId: string): Promise<string | null> {
    return this.pooled.take(serverId);
  }

  /** Enqueues a refill of the server (after a create took from its pool). */
  async requestRefill(serverId: string): Promise<void> {
    if (this.target <= 0) return;
    await this.jobs.dispatch('RefillDatabasePool', { serverId }, { jobId: refillPoolJobId(serverId) });
  }

  /**
   * Refills every server of the creatable regions (non-ACTIVE ones give their pooled databases
   * back, and with the pool off every one does): the reconciler's pass. With the pool off, only a
   * server still holding pooled databases gets a job. A refill whose attempts ran out (its server
   * out of reach for minutes) stays in the failed set under its id, where it would swallow every
   * later enqueue: it is replaced (redispatch).
   */
  async requestRefillEverywhere(): Promise<void> {
    for (const server of await this.servers.directory(true)) {
      if (!CREATABLE_REGIONS.includes(server.region)) continue;
      if (this.target <= 0 && (await this.pooled.countOn(server.id)) === 0) continue;
      await this.jobs.redispatch('RefillDatabasePool', { serverId: server.id }, { jobId: refillPoolJobId(server.id) });
    }
  }

  /**
   * Brings the server's pool up to the target (as far as the server has room): finishes entries a
   * crash left half-built, then builds new ones. A failed build is recorded on its row and left as
   * it is; the job retries, and the build, being idempotent, finishes it. A server that is not
   * ACTIVE gives its entries back instead (giveBack), and so does one drained while the refill runs;
   * with the pool off (a target of 0) every server does, and an ACTIVE one gives back what is above
   * a lowered target.
   *
   * Refills of one server never overlap (Bull may re-run a stalled refill while the first run is
   * still going): the whole refill holds an advisory lock on the data-plane server, so a run never
   * builds an entry another run is working on. A run that finds the lock taken returns at once; the
   * holder fills the pool. A run can still lose its lock session (the server dropped it) while it
   * builds, and another run then finish the same entry: so an entry is marked ready only while still
   * not ready, a failure is recorded only while it is not ready, and a failed build drops nothing
   * (its database may be one the other run has marked ready meanwhile, even one a create has taken).
   */
  async refill(serverId: string): Promise<void> {
    const server = await this.servers.view(serverId);
    if (!server) return;
    const keep = this.keeps(server.state);
    if (keep === 0 && (await this.pooled.countOn(serverId)) === 0) return;
    await this.exclusively(serverId, async () => {
      if ((await this.pooled.countOn(serverId)) > keep) await this.giveBack(server);
      if (keep === 0) return;
      for (const entry of await this.pooled.listOn(serverId, true)) {
        await this.build(entry);
      }
      // A new entry takes a place on the server: the room is read and the entry recorded in the
      // region's placement turn (see Placement), so a create never takes the same last place. The
      // server's row is read again there too: the one read above is the directory's from before
      // the builds, and a drain (or a removal) that landed since stops the refill, a lowered
      // capacity bounds it. The entry is built after that short transaction.
      const reserve = () =>
        this.txHost.withTransaction(async () => {
          await this.placement.takeTurn(server.region);
          const current = await this.servers.current(serverId);
          if (current?.state !== DataPlaneServerState.Active) return 'not active' as const;
          const usage = (await this.placement.usage([serverId])).get(serverId)!;
          if (usage.databases + usage.pooled >= current.maxDatabases) return null;
          const id = randomUUID();
          return this.pooled.save({
            id,
            region: server.region,
            serverId,
            physicalName: physicalDatabaseName(this.config.env.DATA_PLANE_NAME_PREFIX, id),
            ready: false,
            lastError: null,
          });
        });
      let count = await this.pooled.countOn(serverId);
      while (count < this.target) {
        const entry = await reserve();
        if (entry === 'not active') {
          await this.giveBack(server);
          return;
        }
        if (!entry) break;
        await this.build(entry);
        count = await this.pooled.countOn(serverId);
      }
    });
  }

  /** Refills every server of the region (a refill job enqueued before the fleet named a region). */
  async refillRegion(region: Region): Promise<void> {
    for (const server of await this.servers.directory(true)) {
      if (server.region === region) await this.refill(server.id);
    }
  }

  /** Ready entries per region (for operators and tests). */
  async readyCount(region: Region): Promise<number> {
    return this.pooled.readyCountIn(region);
  }

  /** Physical names of up to `limit` of the server's ready entries. */
  readyPhysicalNamesOn(serverId: string, limit: number): Promise<string[]> {
    return this.pooled.readyPhysicalNamesOn(serverId, limit);
  }

  /** Ready entries per server (for operators and tests). */
  async readyCountOn(serverId: string): Promise<number> {
    return this.pooled.readyCountOn(serverId);
  }

  /** How many pooled databases a server in `state` keeps: the target while ACTIVE, else none. */
  private keeps(state: DataPlaneServerState): number {
    return state === DataPlaneServerState.Active ? Math.max(this.target, 0) : 0;
  }

  /**
   * Gives back the pooled databases a server keeps no more (keeps): all of them when it is not
   * ACTIVE (the directory said so; it may be a couple of seconds old) or the pool is off, those
   * above the target otherwise (those not ready first, then the oldest). Each entry is claimed
   * before its database is dropped, in a short transaction that takes the region's placement turn
   * first (creates take an entry in that turn, so none is half-taken while the entries are counted):
   * its row is locked, skipping one a create holds (that create has taken it, and its database is
   * the create's), the server's state and its entries are read again from the metadata database (a
   * server made ACTIVE again keeps its pool), and a ready entry is made unready, so no create takes
   * it once that commits. The database is dropped after the commit (habit 14), then the row is
   * deleted; a drop that fails leaves the unready entry to the next refill, which gives it back (or
   * builds it again, should the server be ACTIVE by then).
   */
  private async giveBack({ id: serverId, region }: DataPlaneServerView): Promise<void> {
    for (const { id } of await this.pooled.listOn(serverId)) {
      const claim = await this.txHost.withTransaction(async () => {
        await this.placement.takeTurn(region);
        const entry = await this.pooled.lockUnlessTaken(id);
        if (!entry) return 'taken' as const;
        const state = (await this.servers.current(serverId))?.state;
        if (state && (await this.pooled.countOn(serverId)) <= this.keeps(state)) return 'kept' as const;
        if (entry.ready) await this.pooled.withdraw(id);
        return entry;
      });
      if (claim === 'kept') return;
      if (claim === 'taken') continue;
      await this.dataPlane.dropDatabase(serverId, claim.physicalName);
      await this.pooled.delete(claim.id);
    }
  }

  /**
   * Runs `work` holding the server's refill lock, an advisory lock on the data-plane server itself
   * (see DataPlane.exclusively): no metadata connection is held while the server works. A refill
   * that finds the lock taken leaves the work to the run holding it. The metadata statements of
   * `work` run on their own (a refill job carries no transaction).
   */
  private async exclusively(serverId: string, work: () => Promise<void>): Promise<void> {
    await this.dataPlane.exclusively(serverId, `warm-pool-refill:${serverId}`, work, { job: true });
  }

  private async build(entry: PooledDatabaseEntity): Promise<void> {
    try {
      if (!(await this.dataPlane.buildDatabase(entry.serverId!, entry.physicalName))) {
        throw new Error('the built database failed verification (owner or CONNECT privilege wrong)');
      }
      await this.pooled.markReady(entry.id);
    } catch (err) {
      const message = messageOf(err);
      this.logger.error(
        { errorCode: ErrorCode.DbCreationFailure, region: entry.region, pooledId: entry.id, err: message },
        'warm-pool database could not be built; will retry',
      );
      // Nothing is dropped: this run may have lost its lock session meanwhile and another run
      // finished the entry (marked it ready, and a create may have taken it). What is half-made
      // stays unready, so nobody is handed it; the retry's idempotent build finishes it, and a
      // server that stops being ACTIVE gives it back (giveBack).
      await this.pooled.recordError(entry.id, message);
      throw err;
    }
  }
}
