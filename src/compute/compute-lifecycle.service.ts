import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, IsNull, Repository } from 'typeorm';
import { DataPlane } from '../data-plane/data-plane.service';
import { serverOf } from '../databases/database-lifecycle.service';
import { DatabaseFinalizers } from '../databases/database-finalizers';
import { DatabaseEntity, DatabaseStatus } from '../databases/database.entity';
import { DatabasesService } from '../databases/databases.service';
import { JobDispatcher } from '../queues/job-dispatcher';
import { Queues } from '../queues/queue-names';
import { Reconciler } from '../queues/reconciler';
import { ComputeInstanceEntity, ComputeInstanceStatus } from './compute-instance.entity';
import { computeJobFor } from './compute-jobs';
import { ComputeTypeEntity } from './compute-type.entity';
import { ComputeUsagePeriodEntity } from './compute-usage-period.entity';
import { connectionLimitFor } from './connection-envelope';
import { messageOf } from '../common/errors/message-of';

const SWEEP_BATCH = 500;

type Outcome = { ok: true } | { ok: false; error: Error };
const OK: Outcome = { ok: true };

/** The data plane refused (or could not be reached); the job retries with backoff. */
class DataPlaneRefused extends Error {}
/** The instance's database is not READY yet; the job retries with backoff, the instance stays where it is. */
class DatabaseNotReady extends Error {}

interface Locked {
  instance: ComputeInstanceEntity;
  /** Null only if the database row vanished (it never does: finalized rows stay as tombstones). */
  database: DatabaseEntity | null;
  manager: EntityManager;
}

/**
 * Moves dedicated compute instances through their life. The row is the desired state
 * (`desiredInstanceType`, `deleted`); jobs converge the data plane to it:
 *
 * - create: PENDING -> PROVISIONING -> READY (a usage period opens);
 * - resize: READY -> RESIZING -> READY (the period at the old size closes, one at the new size opens);
 * - delete: DELETING -> TERMINATED (its period closes, its connections leave the envelope);
 * - a data-plane failure: FAILED (DELETING stays DELETING) with `lastError`, retried with backoff.
 *
 * What an instance is on the data plane: its size's connections added to its database's
 * `CONNECTION LIMIT` (see connection-envelope.ts). Every step runs with the database row locked,
 * then the instance row, so the instances of one database apply their envelope one at a time and
 * never while the database itself is being built or finalized; each step recomputes the envelope
 * from the rows, so running a job twice (or late) changes nothing.
 */
@Injectable()
export class ComputeLifecycle implements OnModuleInit {
  private readonly logger = new Logger(ComputeLifecycle.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(ComputeInstanceEntity) private readonly instances: Repository<ComputeInstanceEntity>,
    private readonly databases: DatabasesService,
    private readonly dataPlane: DataPlane,
    private readonly jobs: JobDispatcher,
    private readonly reconciler: Reconciler,
    private readonly finalizers: DatabaseFinalizers,
  ) {}

  onModuleInit(): void {
    this.reconciler.register('compute', () => this.sweep());
    // A deleted database keeps its instances (and their cost) until its deletion is finalized.
    this.finalizers.register('compute', (database, manager) => this.finalizeForDatabase(database, manager));
  }

  /** Enqueues the job that brings the instance to the state its row asks for (after commit). */
  async dispatch(instance: ComputeInstanceEntity, again = false): Promise<void> {
    const job = computeJobFor(instance);
    const send = again ? this.jobs.redispatch.bind(this.jobs) : this.jobs.dispatch.bind(this.jobs);
    await send(Queues.ComputeLifecycle, job.name, { instanceId: instance.id }, { jobId: job.jobId });
  }

  /**
   * Converges one instance to its desired state. First marks it PROVISIONING or RESIZING (visible
   * while the data plane works), then applies the database's envelope and records the result.
   * Throws when the work could not be done (data plane refused, database not READY yet), so the
   * job is retried with backoff; the sweep picks it up again after the attempts run out.
   */
  async converge(instanceId: string): Promise<void> {
    const started = await this.locked(instanceId, (locked) => this.begin(locked));
    if (!started) return;
    if (!started.ok) throw started.error;
    const applied = await this.locked(instanceId, (locked) => this.apply(locked));
    if (applied && !applied.ok) throw applied.error;
  }

  /**
   * Runs inside a database's finalization (its physical database is gone already): every instance
   * of it is terminated and its usage period closed. Idempotent.
   */
  async finalizeForDatabase(database: DatabaseEntity, manager: EntityManager): Promise<void> {
    const now = new Date();
    await manager.update(ComputeUsagePeriodEntity, { databaseId: database.id, endedAt: IsNull() }, { endedAt: now });
    await manager.query(
      `UPDATE compute_instances
          SET status = $2, terminated = $3, deleted = COALESCE(deleted, $3), last_error = NULL, updated = now()
        WHERE database_id = $1 AND terminated IS NULL`,
      [database.id, ComputeInstanceStatus.Terminated, now],
    );
  }

  /** One reconcile pass: re-enqueues the job of every instance not in its desired state (lost or out of attempts). */
  async sweep(): Promise<void> {
    const unsettled = await this.instances
      .createQueryBuilder('i')
      .select(['i.id', 'i.deleted', 'i.instanceTypeId', 'i.desiredInstanceTypeId'])
      .where('i.terminated IS NULL')
      .andWhere(
        '(i.deleted IS NOT NULL OR i.status <> :ready OR i.instance_type_id IS DISTINCT FROM i.desired_instance_type_id)',
        { ready: ComputeInstanceStatus.Ready },
      )
      .orderBy('i.updated', 'ASC')
      .limit(SWEEP_BATCH)
      .getMany();
    for (const instance of unsettled) await this.dispatch(instance, true);
  }

  private async begin({ instance, database, manager }: Locked): Promise<Outcome | undefined> {
    if (instance.terminated) return undefined;
    if (!database || database.finalized) {
      await this.terminate(manager, instance);
      return undefined;
    }
    if (instance.deleted) return OK;
    if (this.settled(instance)) return undefined;
    if (database.status !== DatabaseStatus.Ready) {
      // Never claim what the data plane does not have: the instance waits where it is.
      const message = `waiting for database ${database.name} to be READY (it is ${database.status})`;
      if (instance.lastError !== message) {
        await manager.update(ComputeInstanceEntity, { id: instance.id }, { lastError: message });
      }
      this.logger.warn({ instanceId: instance.id, databaseId: database.id }, message);
      return { ok: false, error: new DatabaseNotReady(message) };
    }
    const status = instance.instanceTypeId ? ComputeInstanceStatus.Resizing : ComputeInstanceStatus.Provisioning;
    if (instance.status !== status) await manager.update(ComputeInstanceEntity, { id: instance.id }, { status });
    return OK;
  }

  private async apply({ instance, database, manager }: Locked): Promise<Outcome> {
    if (instance.terminated) return OK;
    if (!database || database.finalized) {
      await this.terminate(manager, instance);
      return OK;
    }
    if (instance.deleted) {
      // An instance only ever counted on a READY database; otherwise there is nothing to take back.
      if (database.status === DatabaseStatus.Ready) {
        const refused = await this.applyEnvelope(manager, database, instance, null);
        if (refused) return { ok: false, error: refused };
      }
      await this.terminate(manager, instance);
      this.logger.log({ instanceId: instance.id, databaseId: database.id }, 'compute instance terminated');
      return OK;
    }
    if (this.settled(instance)) return OK;
    if (database.status !== DatabaseStatus.Ready) {
      return { ok: false, error: new DatabaseNotReady(`database ${database.name} is not READY`) };
    }
    const type = await manager.findOneByOrFail(ComputeTypeEntity, { id: instance.desiredInstanceTypeId });
    const refused = await this.applyEnvelope(manager, database, instance, type.connectionLimit);
    if (refused) {
      await manager.update(
        ComputeInstanceEntity,
        { id: instance.id },
        { status: ComputeInstanceStatus.Failed, lastError: refused.message },
      );
      return { ok: false, error: refused };
    }
    await manager.update(
      ComputeInstanceEntity,
      { id: instance.id },
      { instanceTypeId: type.id, status: ComputeInstanceStatus.Ready, lastError: null },
    );
    await this.recordUsage(manager, instance, database, type);
    this.logger.log({ instanceId: instance.id, databaseId: database.id, type: type.id }, 'compute instance ready');
    return OK;
  }

  private settled(instance: ComputeInstanceEntity): boolean {
    return (
      instance.status === ComputeInstanceStatus.Ready && instance.instanceTypeId === instance.desiredInstanceTypeId
    );
  }

  /**
   * Sets the database's connection limit to the envelope of its live instances as they run now,
   * with this instance at `ownLimit` (null: without it). Returns the data plane's refusal, if any
   * (also recorded on the instance as `lastError`).
   */
  private async applyEnvelope(
    manager: EntityManager,
    database: DatabaseEntity,
    instance: ComputeInstanceEntity,
    ownLimit: number | null,
  ): Promise<Error | undefined> {
    const others = await manager.query<{ connection_limit: number }[]>(
      `SELECT t.connection_limit FROM compute_instances i JOIN compute_types t ON t.id = i.instance_type_id
        WHERE i.database_id = $1 AND i.id <> $2 AND i.deleted IS NULL AND i.terminated IS NULL`,
      [database.id, instance.id],
    );
    const limits = others.map((r) => Number(r.connection_limit));
    if (ownLimit !== null) limits.push(ownLimit);
    const limit = connectionLimitFor(limits);
    try {
      await this.dataPlane.setConnectionLimit(serverOf(database), database.physicalName, limit);
      return undefined;
    } catch (err) {
      const error = new DataPlaneRefused(`the data plane refused the connection limit: ${messageOf(err)}`);
      await manager.update(ComputeInstanceEntity, { id: instance.id }, { lastError: error.message });
      this.logger.error(
        { instanceId: instance.id, databaseId: database.id, region: database.region, err: messageOf(err) },
        'could not apply the compute envelope; will retry',
      );
      return error;
    }
  }

  /** Opens the usage period at the instance's new size, closing the one at its old size (same instant). */
  private async recordUsage(
    manager: EntityManager,
    instance: ComputeInstanceEntity,
    database: DatabaseEntity,
    type: ComputeTypeEntity,
  ): Promise<void> {
    const now = new Date();
    const open = await manager.findOneBy(ComputeUsagePeriodEntity, { instanceId: instance.id, endedAt: IsNull() });
    if (open?.instanceTypeId === type.id) return;
    if (open) await manager.update(ComputeUsagePeriodEntity, { id: open.id }, { endedAt: now });
    await manager.insert(ComputeUsagePeriodEntity, {
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

  private async terminate(manager: EntityManager, instance: ComputeInstanceEntity): Promise<void> {
    const now = new Date();
    await manager.update(
      ComputeInstanceEntity,
      { id: instance.id, terminated: IsNull() },
      { status: ComputeInstanceStatus.Terminated, terminated: now, deleted: instance.deleted ?? now, lastError: null },
    );
    await manager.update(ComputeUsagePeriodEntity, { instanceId: instance.id, endedAt: IsNull() }, { endedAt: now });
  }

  /** Runs `work` with the instance's database row, then the instance row, locked (FOR UPDATE). */
  private async locked<T>(instanceId: string, work: (locked: Locked) => Promise<T>): Promise<T | undefined> {
    const found = await this.instances.findOne({ select: { id: true, databaseId: true }, where: { id: instanceId } });
    if (!found) return undefined;
    return this.dataSource.transaction(async (manager) => {
      const database = await this.databases.lock(manager, found.databaseId, 'pessimistic_write');
      const instance = await manager
        .getRepository(ComputeInstanceEntity)
        .createQueryBuilder('i')
        .setLock('pessimistic_write')
        .where('i.id = :id', { id: instanceId })
        .getOne();
      return instance ? work({ instance, database, manager }) : undefined;
    });
  }
}
