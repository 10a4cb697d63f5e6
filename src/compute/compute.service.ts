import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { MetadataTransactions } from '../database/metadata-transactions';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { isUuid } from '../common/http/uuid';
import type { DatabaseEntity } from '../databases/database.entity';
import type { DatabaseResponse } from '../databases/database.response';
import { DatabasesService } from '../databases/databases.service';
import { databaseNotFound } from '../databases/database-name';
import { PlanLimits } from '../subscriptions/plan-limits.service';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { WorkspaceResponse } from '../workspaces/workspace.response';
import { ComputeInstanceEntity, ComputeInstanceStatus } from './compute-instance.entity';
import { ComputeInstanceTypeResponse, DedicatedComputeInstanceResponse } from './compute-instance.response';
import { ComputeInstancesRepository } from './compute-instances.repository';
import { COMPUTE_CHANGES_WINDOW_SECONDS, ComputeLifecycle } from './compute-lifecycle.service';
import { allowedComputeSizes, findComputeType } from './compute-type-lookup';
import type { ComputeTypeEntity } from './compute-type.entity';
import type { CreateComputeInstanceDto } from './dto/create-compute-instance.dto';
import type { ListComputeInstancesQueryDto } from './dto/list-compute-instances-query.dto';
import type { UpdateComputeInstanceDto } from './dto/update-compute-instance.dto';

/** An answer whose work may still be under way in a job (202) or is complete (200). */
export interface Accepted<T> {
  body: T;
  pending: boolean;
}

function typeResponse(t: ComputeTypeEntity): ComputeInstanceTypeResponse {
  return { id: t.id, computeSize: t.computeSize, memory: t.memory, hourlyCost: t.hourlyCost };
}

function parseInstant(name: string, value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) {
    throw new ApiException(ErrorCode.BadRequest, `${name} must be an ISO 8601 date-time, e.g. 2025-01-31T12:00:00Z`);
  }
  return date;
}

/**
 * Dedicated compute instances of a database: their rules (sizes, names, windows), their
 * representation and the desired-state rows ComputeLifecycle converges. Operations act on the
 * database `DatabasesService.findOperable` answers, so they keep working while it is queued for
 * deletion.
 */
@Injectable()
export class ComputeService {
  constructor(
    private readonly txHost: MetadataTransactions,
    private readonly instances: ComputeInstancesRepository,
    private readonly databases: DatabasesService,
    private readonly lifecycle: ComputeLifecycle,
    private readonly plans: PlanLimits,
    private readonly config: AppConfig,
  ) {}

  /** The compute types on offer, in their display order. */
  async listTypes(): Promise<ComputeInstanceTypeResponse[]> {
    return (await this.allTypes()).map(typeResponse);
  }

  /** Records the instance (PENDING) and enqueues its provisioning. */
  async create(
    workspace: WorkspaceEntity,
    databaseName: string,
    dto: CreateComputeInstanceDto,
  ): Promise<DedicatedComputeInstanceResponse> {
    const database = await this.databases.findOperable(workspace, databaseName);
    const types = await this.allTypes();
    const type = this.resolveType(types, dto.instanceSize);
    await this.plans.assertDedicatedCompute(workspace.id);
    const instance = await this.txHost.withNewTransaction(async () => {
      // Creates of one database's instances take turns, so parallel ones never pass the bound together.
      await this.instances.lockCreatesOf(database.id);
      // Shares the lock a finalization takes: no instance is added to a database being finalized.
      const locked = await this.databases.lock(database.id, 'pessimistic_read');
      if (!locked || locked.finalized) throw databaseNotFound(workspace, databaseName);
      const max = this.config.env.COMPUTE_MAX_INSTANCES_PER_DATABASE;
      if ((await this.instances.countUnterminatedOf(database.id)) >= max) {
        throw new ApiException(
          ErrorCode.ThresholdExceeded,
          `A database may have at most ${max} dedicated compute instances; delete one first (it counts until it is terminated)`,
          { status: 403 },
        );
      }
      await this.admitChange(database.id);
      return this.instances.save({
        databaseId: database.id,
        name: dto.instanceName,
        instanceTypeId: null,
        desiredInstanceTypeId: type.id,
        status: ComputeInstanceStatus.Pending,
        lastError: null,
        deleted: null,
        terminated: null,
      });
    });
    await this.lifecycle.dispatch(instance);
    return this.describe(instance, types, database, await this.databases.describe(database, workspace), workspace);
  }

  /**
   * Without a window, the database's instances that are not deleted. With `start` and/or `end`,
   * every instance active at some moment of the window (deleted ones included): not terminated
   * before `start`, created before `end`. Oldest first.
   */
  async list(
    workspace: WorkspaceEntity,
    databaseName: string,
    window: ListComputeInstancesQueryDto,
  ): Promise<DedicatedComputeInstanceResponse[]> {
    const start = parseInstant('start', window.start);
    const end = parseInstant('end', window.end);
    if (start && end && start.getTime() > end.getTime()) {
      throw new ApiException(ErrorCode.BadRequest, 'start must not be after end');
    }
    const database = await this.databases.findOperable(workspace, databaseName);
    const rows = await this.instances.listOfDatabase(database.id, { start, end });
    const types = await this.allTypes();
    const databaseBody = await this.databases.describe(database, workspace);
    return rows.map((row) => this.describe(row, types, database, databaseBody, workspace));
  }

  /** One instance of the database, also once deleted (so its deletion can be followed to TERMINATED). */
  async get(
    workspace: WorkspaceEntity,
    databaseName: string,
    instanceId: string,
  ): Promise<DedicatedComputeInstanceResponse> {
    const database = await this.databases.findOperable(workspace, databaseName);
    const instance = isUuid(instanceId) ? await this.instances.findInDatabase(instanceId, database.id) : null;
    if (!instance) throw this.instanceNotFound(instanceId, databaseName);
    return this.describe(
      instance,
      await this.allTypes(),
      database,
      await this.databases.describe(database, workspace),
      workspace,
    );
  }

  /**
   * Renames and/or resizes. A resize records the new desired size and enqueues the job; the answer
   * is pending (202) until the instance runs at that size. Answers the database with `parent`. A
   * resize up (more connections or a higher hourly cost) needs a level with dedicated compute, as a
   * create does; down is always allowed.
   */
  async update(
    workspace: WorkspaceEntity,
    databaseName: string,
    instanceId: string,
    dto: UpdateComputeInstanceDto,
  ): Promise<Accepted<DatabaseResponse>> {
    if (dto.instanceSize === undefined && dto.instanceName === undefined) {
      throw new ApiException(ErrorCode.BadRequest, 'Nothing to update: give instanceSize and/or instanceName');
    }
    const database = await this.databases.findOperable(workspace, databaseName);
    // The sizes are read only for a resize (a rename needs none).
    const types = dto.instanceSize === undefined ? [] : await this.allTypes();
    const type = dto.instanceSize === undefined ? undefined : this.resolveType(types, dto.instanceSize);
    const { instance, resized } = await this.txHost.withNewTransaction(async () => {
      // A size asked for may be a change that counts: the turn of the database's changes first, as a
      // create takes it (then the instance's row).
      if (type) await this.instances.lockCreatesOf(database.id);
      const row = await this.lockInstance(database, instanceId, databaseName);
      if (row.deleted) {
        throw new ApiException(
          ErrorCode.DbStatusFailure,
          `Compute instance ${instanceId} is deleted and cannot be changed`,
        );
      }
      const changes: Partial<ComputeInstanceEntity> = {};
      if (dto.instanceName !== undefined && dto.instanceName !== row.name) changes.name = dto.instanceName;
      if (type && type.id !== row.desiredInstanceTypeId) {
        const current = types.find((t) => t.id === row.desiredInstanceTypeId);
        if (!current || type.connectionLimit > current.connectionLimit || type.hourlyCost > current.hourlyCost) {
          await this.plans.assertDedicatedCompute(workspace.id, 'grow');
        }
        await this.admitChange(database.id);
        changes.desiredInstanceTypeId = type.id;
      }
      if (Object.keys(changes).length) await this.instances.update(row.id, changes);
      return { instance: { ...row, ...changes }, resized: changes.desiredInstanceTypeId !== undefined };
    });
    if (resized) await this.lifecycle.dispatch(instance);
    const pending =
      type !== undefined &&
      (instance.status !== ComputeInstanceStatus.Ready || instance.instanceTypeId !== instance.desiredInstanceTypeId);
    return {
      body: {
        ...(await this.databases.describe(database, workspace)),
        parent: { id: database.id, name: database.name },
      },
      pending,
    };
  }

  /**
   * Removes the instance from the database at once (`deleted`, DELETING), ends its usage (billing)
   * then, and enqueues its termination; pending (202) until it is TERMINATED. Repeating it answers
   * the same.
   */
  async delete(
    workspace: WorkspaceEntity,
    databaseName: string,
    instanceId: string,
  ): Promise<Accepted<DatabaseResponse>> {
    const database = await this.databases.findOperable(workspace, databaseName);
    const instance = await this.txHost.withNewTransaction(async () => {
      const row = await this.lockInstance(database, instanceId, databaseName);
      if (row.deleted) return row;
      const changes = { deleted: new Date(), status: ComputeInstanceStatus.Deleting };
      await this.instances.update(row.id, changes);
      await this.lifecycle.endUsage(row.id, database, changes.deleted);
      return { ...row, ...changes };
    });
    if (!instance.terminated) await this.lifecycle.dispatch(instance);
    return { body: await this.databases.describe(database, workspace), pending: !instance.terminated };
  }

  private describe(
    instance: ComputeInstanceEntity,
    types: ComputeTypeEntity[],
    database: DatabaseEntity,
    databaseBody: DatabaseResponse,
    workspace: WorkspaceEntity,
  ): DedicatedComputeInstanceResponse {
    const byId = (id: string) => {
      const type = types.find((t) => t.id === id);
      if (!type) throw new Error(`compute type ${id} of instance ${instance.id} is not in compute_types`);
      return type;
    };
    const desired = byId(instance.desiredInstanceTypeId);
    return {
      instanceId: instance.id,
      workspace: WorkspaceResponse.from(workspace),
      database: databaseBody,
      region: database.region,
      instanceName: instance.name,
      instanceType: typeResponse(instance.instanceTypeId ? byId(instance.instanceTypeId) : desired),
      desiredInstanceType: typeResponse(desired),
      status: instance.status,
      created: instance.created,
      updated: instance.updated,
      deleted: instance.deleted ?? undefined,
    };
  }

  private allTypes(): Promise<ComputeTypeEntity[]> {
    return this.instances.allTypes();
  }

  private resolveType(types: ComputeTypeEntity[], size: string): ComputeTypeEntity {
    const type = findComputeType(types, size);
    if (!type) {
      throw new ApiException(
        ErrorCode.BadRequest,
        `instanceSize ${JSON.stringify(size)} is not a compute type; use one of ${allowedComputeSizes(types)}`,
      );
    }
    return type;
  }

  /**
   * Counts a create or a change of size against COMPUTE_CHANGES_PER_DATABASE_PER_DAY and records it,
   * in the context's transaction, under the turn of the database's compute changes (lockCreatesOf),
   * so parallel ones are counted one by one. Each opens a usage period (a billing line kept for good)
   * and has the data plane apply an envelope, so a loop of them would grow both without end. Over the
   * limit: 429 with Retry-After, nothing written. Renames and deletes never count.
   */
  private async admitChange(databaseId: string): Promise<void> {
    const limit = this.config.env.COMPUTE_CHANGES_PER_DATABASE_PER_DAY;
    const wait = await this.instances.changeWait(databaseId, limit, COMPUTE_CHANGES_WINDOW_SECONDS);
    if (wait !== null) {
      throw new ApiException(
        ErrorCode.ThresholdExceeded,
        `The dedicated compute of this database was created or resized ${limit} times in the last 24 hours; retry in ${wait} seconds`,
        { headers: { 'Retry-After': String(wait) } },
      );
    }
    await this.instances.recordChange(databaseId);
  }

  /** The database's instance, locked in the context's transaction; 404 when there is none. */
  private async lockInstance(
    database: DatabaseEntity,
    instanceId: string,
    databaseName: string,
  ): Promise<ComputeInstanceEntity> {
    const row = isUuid(instanceId) ? await this.instances.lock(instanceId, database.id) : null;
    if (!row) throw this.instanceNotFound(instanceId, databaseName);
    return row;
  }

  private instanceNotFound(instanceId: string, databaseName: string): ApiException {
    return new ApiException(ErrorCode.EntityNotFound, `No compute instance ${instanceId} in database ${databaseName}`);
  }
}
