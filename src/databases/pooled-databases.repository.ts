import { Injectable } from '@nestjs/common';
import type { Repository } from 'typeorm';
import type { Region } from '../config/regions';
import { MetadataTransactions } from '../database/metadata-transactions';
import { PooledDatabaseEntity } from './pooled-database.entity';

/**
 * The statements on `pooled_databases` (habit 15), but for the two that read or fix it together
 * with `databases` (DatabasesRepository.usageByServer and attachUnplaced). Statements go through the
 * transaction the context carries (MetadataTransactions): inside its withTransaction they join it,
 * outside they run on their own.
 */
@Injectable()
export class PooledDatabasesRepository {
  constructor(private readonly txHost: MetadataTransactions) {}

  private get repo(): Repository<PooledDatabaseEntity> {
    return this.txHost.tx.getRepository(PooledDatabaseEntity);
  }

  /**
   * Takes the server's oldest ready entry, deleting its row in the context's transaction (refused
   * outside one); concurrent takers skip each other's picks. Its physical name, or null.
   */
  async take(serverId: string): Promise<string | null> {
    const pooled = this.txHost.required('claiming a pooled database').getRepository(PooledDatabaseEntity);
    const entry = await pooled
      .createQueryBuilder('p')
      .setLock('pessimistic_write')
      .setOnLocked('skip_locked')
      .where('p.server_id = :serverId AND p.ready = true', { serverId })
      .orderBy('p.created', 'ASC')
      .addOrderBy('p.id', 'ASC')
      .limit(1)
      .getOne();
    if (!entry) return null;
    await pooled.delete({ id: entry.id });
    return entry.physicalName;
  }

  /**
   * Locks the entry for the rest of the context's transaction (refused outside one), unless someone
   * holds it (a create taking it: see take); the entry, or null when it is held or gone.
   */
  lockUnlessTaken(id: string): Promise<PooledDatabaseEntity | null> {
    return this.txHost
      .rowLocking(PooledDatabaseEntity, 'p', 'a pooled database row lock')
      .setOnLocked('skip_locked')
      .where('p.id = :id', { id })
      .getOne();
  }

  /** Makes the entry unready: no create takes it from then on (see take). */
  async withdraw(id: string): Promise<void> {
    await this.repo.update({ id }, { ready: false });
  }

  /** The server's entries (only those not ready, with `notReady`), those not ready first, then oldest first. */
  listOn(serverId: string, notReady = false): Promise<PooledDatabaseEntity[]> {
    return this.repo.find({
      where: notReady ? { serverId, ready: false } : { serverId },
      order: { ready: 'ASC', created: 'ASC' },
    });
  }

  save(row: Partial<PooledDatabaseEntity>): Promise<PooledDatabaseEntity> {
    return this.repo.save(this.repo.create(row));
  }

  async delete(id: string): Promise<void> {
    await this.repo.delete({ id });
  }

  /** Deletes every entry of the server; how many. */
  async deleteAllOn(serverId: string): Promise<number> {
    return (await this.repo.delete({ serverId })).affected ?? 0;
  }

  /** Marks the entry ready, only while it is not (a second run never re-marks it). */
  async markReady(id: string): Promise<void> {
    await this.repo.update({ id, ready: false }, { ready: true, lastError: null });
  }

  /** Records a failed build on the entry, only while it is not ready (another run may have finished it). */
  async recordError(id: string, lastError: string): Promise<void> {
    await this.repo.update({ id, ready: false }, { lastError });
  }

  countOn(serverId: string): Promise<number> {
    return this.repo.countBy({ serverId });
  }

  readyCountIn(region: Region): Promise<number> {
    return this.repo.countBy({ region, ready: true });
  }

  /** Physical names of up to `limit` of the server's ready entries. */
  async readyPhysicalNamesOn(serverId: string, limit: number): Promise<string[]> {
    const rows = await this.repo.find({
      select: { physicalName: true },
      where: { serverId, ready: true },
      take: limit,
    });
    return rows.map((r) => r.physicalName);
  }

  readyCountOn(serverId: string): Promise<number> {
    return this.repo.countBy({ serverId, ready: true });
  }
}
