import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, IsNull, type Repository } from 'typeorm';
import type { Region } from '../config/regions';
import { MetadataTransactions } from '../database/metadata-transactions';
import { lockForContextTransaction } from '../database/transaction-lock';
import { DataPlaneServerEntity } from './data-plane-server.entity';

/**
 * Every statement on `data_plane_servers` (habit 15). Statements go through the transaction the
 * context carries (MetadataTransactions): inside its withTransaction they join it, outside they run
 * on their own; the reads behind the process-wide caches run on the pool (see `onPool`).
 */
@Injectable()
export class DataPlaneServersRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly txHost: MetadataTransactions,
  ) {}

  private get repo(): Repository<DataPlaneServerEntity> {
    return this.txHost.tx.getRepository(DataPlaneServerEntity);
  }

  /**
   * For the reads that fill DataPlaneServers' process-wide caches (the directory, the opened admin
   * URLs): whatever transaction the first caller is in, every caller shares the answer, so it is
   * read on the pool, never in (or failing with) one caller's transaction.
   */
  private get onPool(): Repository<DataPlaneServerEntity> {
    return this.dataSource.getRepository(DataPlaneServerEntity);
  }

  /** Takes an advisory lock named `key` for the rest of the context's transaction. */
  lockKey(key: string): Promise<void> {
    return lockForContextTransaction(this.txHost, key);
  }

  /** Locks the row (FOR UPDATE) for the rest of the context's transaction (refused outside one). */
  lock(id: string): Promise<DataPlaneServerEntity | null> {
    return this.txHost
      .rowLocking(DataPlaneServerEntity, 's', 'a data-plane server row lock')
      .where('s.id = :id', { id })
      .getOne();
  }

  existsIn(region: Region): Promise<boolean> {
    return this.repo.existsBy({ region });
  }

  countIn(region: Region): Promise<number> {
    return this.repo.countBy({ region });
  }

  save(row: Partial<DataPlaneServerEntity>): Promise<DataPlaneServerEntity> {
    return this.repo.save(this.repo.create(row));
  }

  /** Every server with its sealed admin URL, oldest first (on the pool). */
  all(): Promise<DataPlaneServerEntity[]> {
    return this.onPool
      .createQueryBuilder('s')
      .addSelect('s.adminUrlCiphertext')
      .orderBy('s.created', 'ASC')
      .addOrderBy('s.id', 'ASC')
      .getMany();
  }

  /** The region's server on the cluster of this identifier. */
  findBySystemIdentifier(region: Region, systemIdentifier: string): Promise<DataPlaneServerEntity | null> {
    return this.repo.findOneBy({ region, systemIdentifier });
  }

  /** The servers whose cluster identifier is not recorded yet (registered before it was). */
  unidentified(): Promise<DataPlaneServerEntity[]> {
    return this.repo.findBy({ systemIdentifier: IsNull() });
  }

  findById(id: string): Promise<DataPlaneServerEntity | null> {
    return this.repo.findOneBy({ id });
  }

  /** The row with its sealed admin URL (a column not selected otherwise; on the pool). */
  findWithAdminUrl(id: string): Promise<DataPlaneServerEntity | null> {
    return this.onPool.createQueryBuilder('s').addSelect('s.adminUrlCiphertext').where('s.id = :id', { id }).getOne();
  }

  async update(id: string, changes: Partial<DataPlaneServerEntity>): Promise<void> {
    await this.repo.update({ id }, changes);
  }

  async delete(id: string): Promise<void> {
    await this.repo.delete({ id });
  }
}
