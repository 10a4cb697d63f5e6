import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { MetadataTransactions } from '../database/metadata-transactions';
import { pruneInBatches } from '../database/prune-in-batches';
import { DataPlane } from '../data-plane/data-plane.service';
import { serverOf } from '../databases/database-lifecycle.service';
import { DatabaseFinalizers } from '../databases/database-finalizers';
import { DatabaseEntity, DatabaseStatus } from '../databases/database.entity';
import { DatabasesService } from '../databases/databases.service';
import { deletionDueOf } from '../databases/deletion-due';
import { sweepUsableDatabases } from '../databases/usable-databases-sweep';
import { JobDispatcher } from '../queues/job-dispatcher';
import { Reconciler } from '../queues/reconciler';
import { ComputeInstanceEntity, ComputeInstanceStatus } from './compute-instance.entity';
import { ComputeInstancesRepository } from './compute-instances.repository';
import { computeJobFor } from './compute-jobs';
import type { ComputeTypeEntity } from './compute-type.entity';
import { ComputeUsagePeriodsRepository } from './compute-usage-periods.repository';
import { connectionLimitFor } from './connection-envelope';
import { messageOf } from '../common/errors/message-of';

/** The window of COMPUTE_CHANGES_PER_DATABASE_PER_DAY. */
export const COMPUTE_CHANGES_WINDOW_SECONDS = 24 * 3600;

const SWEEP_BATCH = 500;

type Outcome = { ok: true } | { ok: false; error: Error };
const OK: Outcome = { ok: true };

/**
 * The end to record for a period of `database` closing at `at`: `at`, or when the database's deletion
 * was due if that came first (its compute is billed until then, never while its finalization waits).
 */
function billedUntil(at: Date, database: DatabaseEntity | null): Date {
  const due = database ? deletionDueOf(database) : null;
  return due && due.getTime() < at.getTime() ? due : at;
}

/** The data plane refused (or could not be reached); the job retries with backoff. */
class DataPlaneRefused extends Error {}
/** The instance's database is not READY yet; the job retries with backoff, the instance stays where it is. */
class DatabaseNotReady extends Error {}

type Plan =
  | { kind: 'done' }
  | { kind: 'failed'; error: Error }
  | { kind: 'terminate'; instance: ComputeInstanceEntity; database: DatabaseEntity; limit: number }
  | {
      kind: 'ready';
      instance: ComputeInstanceEntity;
      database: DatabaseEntity;
      type: ComputeTypeEntity;
      limit: number;
    };

interface Locked {
  instance: ComputeInstanceEntity;
  /** Null only if the database row vanished (it never does: finalized rows stay as tombstones). */
  database: DatabaseEntity | null;
}

/**
 * Moves dedicated compute instances through their life. The row is the desired state
 * (`desiredInstanceType`, `deleted`); jobs converge the data plane to it:
 *
 * - create: PENDING -> PROVISIONING -> READY (a usage period opens);
 * - resize: READY -> RESIZING -> READY (the period at the old size closes, one at the new size opens);
 * - delete: DELETING -> TERMINATED (its connections leave the envelope). Its period closed when the
 *   delete was accepted (ComputeService.delete, endUsage): billing never waits for the data plane;
 * - a data-plane failure: FAILED (DELETING stays DELETING) with `lastError`, retried with backoff.
 *
 * What an instance is on the data plane: its size's connections added to its database's
 * `CONNECTION LIMIT`, on top of the default every database has (see connection-envelope.ts). Every metadata step runs with the database row
 * locked, then the instance row, and never while the data plane works; the instances of one
 * database apply their envelope one at a time (an advisory lock on its data-plane server); each
 * step recomputes the envelope from the rows, so running a job twice (or late) changes nothing.
 */
@Injectable()
export class ComputeLifecycle implements OnModuleInit {
  private readonly logger = new Logger(ComputeLifecycle.name);

  constructor(
    private readonly txHost: MetadataTransactions,
    private readonly instances: ComputeInstancesRepository,
    private readonly periods: ComputeUsagePeriodsRepository,
    private readonly databases: DatabasesService,
    private readonly dataPlane: DataPlane,
    private readonly jobs: JobDispatcher,
    private readonly reconciler: Reconciler,
    private readonly finalizers: DatabaseFinalizers,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.reconciler.register('compute', () => this.sweep());
    this.reconciler.register('compute-changes-pruning', () => this.pruneChanges());
    // A deleted database keeps its instances until its deletion is finalized, and their cost until
    // it was due. The finalization's transaction is the one the context carries.
    this.finalizers.register('compute', (database) => this.finalizeForDatabase(database));
  }

  /**
   * Reconciler task: deletes the records of compute changes that have left the window of
   * COMPUTE_CHANGES_PER_DATABASE_PER_DAY, a batch at a time (a backlog takes several passes); how
   * many it deleted.
   */
  async pruneChanges(): Promise<number> {
    const deleted = await pruneInBatches((take) =>
      this.instances.deleteChangesOlderThan(COMPUTE_CHANGES_WINDOW_SECONDS, take),
    );
    if (deleted > 0) this.logger.log({ deleted }, 'compute change records past the limit window pruned');
    return deleted;
  }

  /** Enqueues the job that brings the instance to the state its row asks for (after commit). */
  async dispatch(instance: ComputeInstanceEntity, again = false): Promise<void> {
    const job = computeJobFor(instance);
    const send = again ? this.jobs.redispatch.bind(this.jobs) : this.jobs.dispatch.bind(this.jobs);
    await send(job.job, { instanceId: instance.id }, { jobId: job.jobId });
  }

  /**
   * Converges one instance to its desired state. First marks it PROVISIONING or RESIZING (visible
   * while the data plane works), then applies the database's envelope and records the result.
   * Throws when the work could not be done (data plane refused, database not READY yet), so the
   * job is retried with backoff; the sweep picks it up again after the attempts run out.
   *
   * No metadata transaction is open while the data plane works (habit 14): the envelope is planned
   * in a short transaction with the rows locked, applied, then recorded in a second one that first
   * checks the instance still wants what was applied (else it plans again). Envelope changes of one
   * database take turns under an advisory lock on its data-plane server, so the last one applied
   * was planned from the latest rows.
   */
  async converge(instanceId: string): Promise<void> {
    const started = await this.locked(instanceId, (locked) => this.begin(locked));
    if (!started) return;
    if (!started.ok) throw started.error;
    // Decided first without any data-plane lock: an instance with nothing to apply (or whose
    // database is not READY, or whose server is unreachable and it has nothing to take back there)
    // never waits for its server.
    const first = await this.locked(instanceId, (locked) => this.plan(locked));
    if (!first || first.kind === 'done') return;
    if (first.kind === 'failed') throw first.error;
    const applied = await this.dataPlane.exclusively(
      serverOf(first.database),
      `compute-envelope:${first.database.physicalName}`,
      () => this.applyOnce(instanceId),
      // A job: it fails at once on a server known not to answer, not holding a slot for its timeout.
      { job: true },
    );
    if (!applied) throw new DataPlaneRefused("another run is applying this database's envelope; will retry");
    if (!applied.ok) throw applied.error;
  }

  /** Plan, apply, record (see converge); plans again (a few times) when the instance changed meanwhile. */
  private async applyOnce(instanceId: string): Promise<Outcome> {
    for (let round = 0; round < 3; round += 1) {
      const plan = await this.locked(instanceId, (locked) => this.plan(locked));
      if (!plan || plan.kind === 'done') return OK;
      if (plan.kind === 'failed') return { ok: false, error: plan.error };
      try {
        await this.dataPlane.setConnectionLimit(serverOf(plan.database), plan.database.physicalName, plan.limit);
      } catch (err) {
        const error = new DataPlaneRefused(`the data plane refused the connection limit: ${messageOf(err)}`);
        this.logger.error(
          { instanceId, databaseId: plan.database.id, region: plan.database.region, err: messageOf(err) },
          'could not apply the compute envelope; will retry',
        );
        await this.locked(instanceId, async ({ instance }) => {
          if (!this.unchanged(instance, plan.instance)) return;
          const failed = plan.kind === 'ready' ? { status: ComputeInstanceStatus.Failed } : {};
          await this.instances.update(instance.id, { ...failed, lastError: error.message });
        });
        return { ok: false, error };
      }
      const recorded = await this.locked(instanceId, async ({ instance, database }) => {
        if (!this.unchanged(instance, plan.instance) || !database) return false;
        if (plan.kind === 'terminate') {
          await this.terminate(instance, database);
          this.logger.log({ instanceId: instance.id, databaseId: database.id }, 'compute instance terminated');
          return true;
        }
        await this.instances.update(instance.id, {
          instanceTypeId: plan.type.id,
          status: ComputeInstanceStatus.Ready,
          lastError: null,
        });
        await this.recordUsage(instance, database, plan.type);
        this.logger.log(
          { instanceId: instance.id, databaseId: database.id, type: plan.type.id },
          'compute instance ready',
        );
        return true;
      });
      if (recorded !== false) return OK;
    }
    return {
      ok: false,
      error: new DataPlaneRefused('the instance kept changing while its envelope was applied; will retry'),
    };
  }

  /** Whether the instance still wants what was planned (same desired size, same deletion, not terminated). */
  private unchanged(now: ComputeInstanceEntity, planned: ComputeInstanceEntity): boolean {
    return (
      !now.terminated &&
      now.desiredInstanceTypeId === planned.desiredInstanceTypeId &&
      (now.deleted?.getTime() ?? null) === (planned.deleted?.getTime() ?? null)
    );
  }

  /**
   * Ends the instance's usage at `at`, the moment its delete is accepted (its row locked, in the
   * transaction the context carries): it is billed and measured up to the customer's request, not
   * up to its termination, which waits for the data plane. No period opens for it afterwards: the
   * READY recording checks, with the row locked, that the instance was not deleted meanwhile.
   */
  async endUsage(instanceId: string, database: DatabaseEntity, at: Date): Promise<void> {
    this.txHost.required('ending compute usage');
    await this.periods.closeOpenOfInstance(instanceId, billedUntil(at, database));
  }

  /**
   * Runs inside a database's finalization (its physical database is gone already): every instance
   * of it is terminated and its usage period closed when the deletion was due (not now: a late
   * finalization costs the customer nothing), in the transaction the context carries. Idempotent.
   */
  async finalizeForDatabase(database: DatabaseEntity): Promise<void> {
    this.txHost.required('compute finalization');
    const now = new Date();
    // Instances, then periods: the order in which a delete (endUsage) takes them, so the two never deadlock.
    await this.instances.terminateAllOf(database.id, now);
    await this.periods.closeOpenOfDatabase(database.id, billedUntil(now, database));
  }

  /**
   * One reconcile pass: re-enqueues the job of every instance not in its desired state (lost or out
   * of attempts), a page at a time, then re-asserts the envelope of every usable database
   * (reassertEnvelopes). Every one, not a first batch: instances waiting for their database (a
   * region's outage) stay unsettled with rows that do not change, and a batch of those taken first
   * at every pass kept a lost job behind them from ever coming back. A job still queued is not
   * doubled (its id).
   */
  async sweep(): Promise<void> {
    let after: string | undefined;
    for (;;) {
      const page = await this.instances.unsettled(SWEEP_BATCH, after);
      // A page's enqueues at once (ioredis pipelines them): a backlog costs round trips per page, not per instance.
      await Promise.all(page.map((instance) => this.dispatch(instance, true)));
      if (page.length < SWEEP_BATCH) break;
      after = page[page.length - 1].id;
    }
    await this.reassertEnvelopes();
  }

  /**
   * Puts back the envelope (the default plus its instances' connections) of every usable database
   * (READY, not finalized) whose limit on the data plane differs: a database of an install from
   * before the default existed (no limit, -1), a warm-pool entry built then and claimed since, a
   * limit changed on the server by hand. Per server one catalog read; only a database that differs
   * is written, under its envelope's lock (taken by its instances' jobs too; skipped if one holds
   * it) and from the rows read again under it. A database with an instance not in its desired state
   * is left to that instance's job, which applies the whole envelope.
   */
  private async reassertEnvelopes(): Promise<void> {
    await sweepUsableDatabases(
      this.databases,
      this.logger,
      'connection-limit checks',
      SWEEP_BATCH,
      async (serverId, batch) => {
        const found = await this.dataPlane.connectionLimits(
          serverId,
          batch.map((d) => d.physicalName),
        );
        const envelopes = await this.settledEnvelopes(batch.map((d) => d.id));
        for (const database of batch) {
          const limit = found.get(database.physicalName);
          const envelope = envelopes.get(database.id);
          if (limit === undefined || envelope === undefined || limit === envelope) continue;
          await this.restoreEnvelope(serverId, database, limit);
        }
      },
    );
  }

  /** Sets the database's envelope, read again with its envelope's lock held (see reassertEnvelopes). */
  private async restoreEnvelope(
    serverId: string,
    database: { id: string; physicalName: string },
    found: number,
  ): Promise<void> {
    await this.dataPlane.exclusively(serverId, `compute-envelope:${database.physicalName}`, async () => {
      const envelope = (await this.settledEnvelopes([database.id])).get(database.id);
      if (envelope === undefined) return;
      await this.dataPlane.setConnectionLimit(serverId, database.physicalName, envelope);
      this.logger.warn(
        { databaseId: database.id, serverId, found, restored: envelope },
        "a database's connection limit differed from its envelope; restored",
      );
    });
  }

  /**
   * The envelope each of these databases should have, for those whose instances are all in their
   * desired state (the others are left out: their jobs apply it).
   */
  private async settledEnvelopes(databaseIds: string[]): Promise<Map<string, number>> {
    const live = await this.instances.liveOfDatabases(databaseIds);
    const envelopes = new Map<string, number>();
    for (const id of databaseIds) {
      const instances = live.get(id);
      if (instances?.settling) continue;
      envelopes.set(id, connectionLimitFor(this.baseLimit, instances?.limits ?? []));
    }
    return envelopes;
  }

  /** What a database without instances accepts (DATA_PLANE_DEFAULT_CONNECTION_LIMIT). */
  private get baseLimit(): number {
    return this.config.env.DATA_PLANE_DEFAULT_CONNECTION_LIMIT;
  }

  private async begin({ instance, database }: Locked): Promise<Outcome | undefined> {
    if (instance.terminated) return undefined;
    if (!database || database.finalized) {
      await this.terminate(instance, database);
      return undefined;
    }
    if (instance.deleted) return OK;
    if (this.settled(instance)) return undefined;
    if (database.status !== DatabaseStatus.Ready) {
      // Never claim what the data plane does not have: the instance waits where it is.
      const message = `waiting for database ${database.name} to be READY (it is ${database.status})`;
      if (instance.lastError !== message) {
        await this.instances.update(instance.id, { lastError: message });
      }
      this.logger.warn({ instanceId: instance.id, databaseId: database.id }, message);
      return { ok: false, error: new DatabaseNotReady(message) };
    }
    const status = instance.instanceTypeId ? ComputeInstanceStatus.Resizing : ComputeInstanceStatus.Provisioning;
    if (instance.status !== status) await this.instances.update(instance.id, { status });
    return OK;
  }

  /**
   * What the instance needs on the data plane, decided with the rows locked: nothing (done), the
   * envelope without it then termination, or the envelope with its desired size then READY.
   */
  private async plan({ instance, database }: Locked): Promise<Plan> {
    if (instance.terminated) return { kind: 'done' };
    if (!database || database.finalized) {
      await this.terminate(instance, database);
      return { kind: 'done' };
    }
    if (instance.deleted) {
      // An instance only ever counted on a READY database; otherwise there is nothing to take back.
      if (database.status !== DatabaseStatus.Ready) {
        await this.terminate(instance, database);
        this.logger.log({ instanceId: instance.id, databaseId: database.id }, 'compute instance terminated');
        return { kind: 'done' };
      }
      return { kind: 'terminate', instance, database, limit: await this.envelope(database, instance, null) };
    }
    if (this.settled(instance)) return { kind: 'done' };
    if (database.status !== DatabaseStatus.Ready) {
      return { kind: 'failed', error: new DatabaseNotReady(`database ${database.name} is not READY`) };
    }
    const type = await this.instances.typeById(instance.desiredInstanceTypeId);
    return {
      kind: 'ready',
      instance,
      database,
      type,
      limit: await this.envelope(database, instance, type.connectionLimit),
    };
  }

  private settled(instance: ComputeInstanceEntity): boolean {
    return (
      instance.status === ComputeInstanceStatus.Ready && instance.instanceTypeId === instance.desiredInstanceTypeId
    );
  }

  /**
   * The database's connection limit: the default plus its live instances' connections as they run
   * now, with this instance at `ownLimit` (null: without it).
   */
  private async envelope(
    database: DatabaseEntity,
    instance: ComputeInstanceEntity,
    ownLimit: number | null,
  ): Promise<number> {
    const limits = await this.instances.liveLimitsOfOthers(database.id, instance.id);
    if (ownLimit !== null) limits.push(ownLimit);
    return connectionLimitFor(this.baseLimit, limits);
  }

  /**
   * Opens the usage period at the instance's new size, closing the one at its old size (same instant;
   * the old one not past its database's deletion due time).
   */
  private async recordUsage(
    instance: ComputeInstanceEntity,
    database: DatabaseEntity,
    type: ComputeTypeEntity,
  ): Promise<void> {
    const now = new Date();
    const open = await this.periods.findOpen(instance.id);
    if (open?.instanceTypeId === type.id) return;
    if (open) await this.periods.close(open.id, billedUntil(now, database));
    await this.periods.insert({
      instanceId: instance.id,
      databaseId: database.id,
      workspaceId: database.workspaceId,
      instanceTypeId: type.id,
      computeSize: type.computeSize,
      vcpus: type.vcpus,
      hourlyCost: type.hourlyCost,
      startedAt: now,
      endedAt: null,
    });
  }

  /**
   * Marks the instance TERMINATED. Its period is closed already (by its delete, or by its database's
   * finalization); one left open (an instance deleted before deletes closed it) ends when the
   * instance was deleted, as it would have then.
   */
  private async terminate(instance: ComputeInstanceEntity, database: DatabaseEntity | null): Promise<void> {
    const now = new Date();
    await this.instances.terminate(instance, now);
    await this.periods.closeOpenOfInstance(instance.id, billedUntil(instance.deleted ?? now, database));
  }

  /** Runs `work` with the instance's database row, then the instance row, locked (FOR UPDATE). */
  private async locked<T>(instanceId: string, work: (locked: Locked) => Promise<T>): Promise<T | undefined> {
    const found = await this.instances.findDatabaseOf(instanceId);
    if (!found) return undefined;
    // In the context's transaction: DatabasesService.lock takes the database row lock in it.
    return this.txHost.withTransaction(async () => {
      const database = await this.databases.lock(found.databaseId, 'pessimistic_write');
      const instance = await this.instances.lock(instanceId);
      return instance ? work({ instance, database }) : undefined;
    });
  }
}
