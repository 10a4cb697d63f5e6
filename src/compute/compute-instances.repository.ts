import { Injectable } from '@nestjs/common';
import { IsNull, type Repository } from 'typeorm';
import { MetadataTransactions } from '../database/metadata-transactions';
import { pruneOlderThan, windowWait } from '../database/sliding-window';
import { lockForContextTransaction } from '../database/transaction-lock';
import { ComputeInstanceEntity, ComputeInstanceStatus } from './compute-instance.entity';
import { ComputeTypeEntity } from './compute-type.entity';

/**
 * Every statement on `compute_instances`, `compute_types` and `compute_changes` (habit 15). Statements go through the
 * transaction the context carries (MetadataTransactions): inside its withTransaction they join it,
 * outside they run on their own.
 */
@Injectable()
export class ComputeInstancesRepository {
  constructor(private readonly txHost: MetadataTransactions) {}

  private get repo(): Repository<ComputeInstanceEntity> {
    return this.txHost.tx.getRepository(ComputeInstanceEntity);
  }

  /** The compute types on offer, in their display order. */
  allTypes(): Promise<ComputeTypeEntity[]> {
    return this.txHost.tx.getRepository(ComputeTypeEntity).find({ order: { position: 'ASC', id: 'ASC' } });
  }

  typeById(id: string): Promise<ComputeTypeEntity> {
    return this.txHost.tx.getRepository(ComputeTypeEntity).findOneByOrFail({ id });
  }

  /**
   * Takes the turn of the database's instance creates and changes of size (counted together against
   * COMPUTE_CHANGES_PER_DATABASE_PER_DAY) for the rest of the context's transaction.
   */
  lockCreatesOf(databaseId: string): Promise<void> {
    return lockForContextTransaction(this.txHost, `compute-instances:${databaseId}`);
  }

  /** The database's instances not terminated (a deleted one keeps its connections until then). */
  countUnterminatedOf(databaseId: string): Promise<number> {
    return this.repo.countBy({ databaseId, terminated: IsNull() });
  }

  /**
   * Seconds until the database's compute may be created or resized again: null while fewer than
   * `limit` of its changes were recorded in the last `windowSeconds`; otherwise until the limit-th
   * most recent leaves the window. Read under lockCreatesOf, in the same transaction.
   */
  changeWait(databaseId: string, limit: number, windowSeconds: number): Promise<number | null> {
    return windowWait(
      this.txHost.tx,
      { table: 'compute_changes', at: 'created', keyColumn: 'database_id' },
      databaseId,
      limit,
      windowSeconds,
    );
  }

  /** Records a create or change of size of the database's compute (counted by changeWait). */
  async recordChange(databaseId: string): Promise<void> {
    await this.txHost.tx.query('INSERT INTO compute_changes (database_id) VALUES ($1)', [databaseId]);
  }

  /** Deletes up to `take` records of changes that have left the window, oldest first; how many. */
  deleteChangesOlderThan(windowSeconds: number, take: number): Promise<number> {
    return pruneOlderThan(this.txHost.tx, 'compute_changes', windowSeconds, take);
  }

  save(row: Partial<ComputeInstanceEntity>): Promise<ComputeInstanceEntity> {
    return this.repo.save(this.repo.create(row));
  }

  async update(id: string, changes: Partial<ComputeInstanceEntity>): Promise<void> {
    await this.repo.update({ id }, changes);
  }

  /** The instance's id and database (a narrow read, before its rows are locked). */
  findDatabaseOf(id: string): Promise<Pick<ComputeInstanceEntity, 'id' | 'databaseId'> | null> {
    return this.repo.findOne({ select: { id: true, databaseId: true }, where: { id } });
  }

  findInDatabase(id: string, databaseId: string): Promise<ComputeInstanceEntity | null> {
    return this.repo.findOneBy({ id, databaseId });
  }

  /**
   * Locks the instance row (FOR UPDATE; of that database, when given) for the rest of the context's
   * transaction (refused outside one).
   */
  lock(id: string, databaseId?: string): Promise<ComputeInstanceEntity | null> {
    const query = this.txHost
      .rowLocking(ComputeInstanceEntity, 'i', 'a compute instance row lock')
      .where('i.id = :id', { id });
    if (databaseId !== undefined) query.andWhere('i.database_id = :databaseId', { databaseId });
    return query.getOne();
  }

  /**
   * Without a window, the database's instances that are not deleted. With `start` and/or `end`,
   * those not terminated before `start`, created before `end`. Oldest first.
   */
  listOfDatabase(databaseId: string, window: { start?: Date; end?: Date }): Promise<ComputeInstanceEntity[]> {
    const { start, end } = window;
    const query = this.repo.createQueryBuilder('i').where('i.database_id = :databaseId', { databaseId });
    // Not deleted (a terminated instance always is): through the index of those not terminated.
    if (!start && !end) query.andWhere('i.deleted IS NULL AND i.terminated IS NULL');
    if (start) query.andWhere('(i.terminated IS NULL OR i.terminated >= :start)', { start });
    if (end) query.andWhere('i.created < :end', { end });
    return query.orderBy('i.created', 'ASC').addOrderBy('i.id', 'ASC').getMany();
  }

  /** Marks the instance TERMINATED at `at` unless it already is (deleted then too, if it was not). */
  async terminate(instance: ComputeInstanceEntity, at: Date): Promise<void> {
    await this.repo.update(
      { id: instance.id, terminated: IsNull() },
      { status: ComputeInstanceStatus.Terminated, terminated: at, deleted: instance.deleted ?? at, lastError: null },
    );
  }

  /** Marks every instance of the database not yet terminated TERMINATED at `at`. */
  async terminateAllOf(databaseId: string, at: Date): Promise<void> {
    await this.txHost.tx.query(
      `UPDATE compute_instances
          SET status = $2, terminated = $3, deleted = COALESCE(deleted, $3), last_error = NULL, updated = now()
        WHERE database_id = $1 AND terminated IS NULL`,
      [databaseId, ComputeInstanceStatus.Terminated, at],
    );
  }

  /**
   * For each of these databases that has instances not terminated: their connection limits at the
   * size they run, and whether one of them is not in its desired state (its job will apply the
   * database's envelope). Databases without such instances are left out.
   */
  async liveOfDatabases(databaseIds: string[]): Promise<Map<string, { limits: number[]; settling: boolean }>> {
    const byDatabase = new Map<string, { limits: number[]; settling: boolean }>();
    if (databaseIds.length === 0) return byDatabase;
    const rows = await this.txHost.tx.query<
      { database_id: string; connection_limit: number | null; settling: boolean }[]
    >(
      `SELECT i.database_id, t.connection_limit,
              (i.deleted IS NOT NULL OR i.status <> '${ComputeInstanceStatus.Ready}'
               OR i.instance_type_id IS DISTINCT FROM i.desired_instance_type_id) AS settling
         FROM compute_instances i LEFT JOIN compute_types t ON t.id = i.instance_type_id
        WHERE i.database_id = ANY($1) AND i.terminated IS NULL`,
      [databaseIds],
    );
    for (const row of rows) {
      const entry = byDatabase.get(row.database_id) ?? { limits: [], settling: false };
      if (row.connection_limit !== null) entry.limits.push(Number(row.connection_limit));
      entry.settling ||= row.settling;
      byDatabase.set(row.database_id, entry);
    }
    return byDatabase;
  }

  /** The connection limits of the database's live instances other than `instanceId`, at the size they run. */
  async liveLimitsOfOthers(databaseId: string, instanceId: string): Promise<number[]> {
    const others = await this.txHost.tx.query<{ connection_limit: number }[]>(
      `SELECT t.connection_limit FROM compute_instances i JOIN compute_types t ON t.id = i.instance_type_id
        WHERE i.database_id = $1 AND i.id <> $2 AND i.deleted IS NULL AND i.terminated IS NULL`,
      [databaseId, instanceId],
    );
    return others.map((r) => Number(r.connection_limit));
  }

  /**
   * Up to `take` instances not in their desired state (not terminated) with an id above `after`, in
   * id order (a page of them: see ComputeLifecycle.sweep). The condition is
   * IDX_compute_instances_unsettled's, its status a literal so that any plan (a generic one
   * included) can read that index: the settled and terminated instances are not read.
   */
  unsettled(take: number, after?: string): Promise<ComputeInstanceEntity[]> {
    const query = this.repo
      .createQueryBuilder('i')
      .select(['i.id', 'i.deleted', 'i.instanceTypeId', 'i.desiredInstanceTypeId'])
      .where('i.terminated IS NULL')
      .andWhere(
        `(i.deleted IS NOT NULL OR i.status <> '${ComputeInstanceStatus.Ready}' OR i.instance_type_id IS DISTINCT FROM i.desired_instance_type_id)`,
      );
    if (after) query.andWhere('i.id > :after', { after });
    return query.orderBy('i.id', 'ASC').limit(take).getMany();
  }
}
