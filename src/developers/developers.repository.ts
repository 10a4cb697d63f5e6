import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, In, IsNull, type Repository } from 'typeorm';
import { type PreparedRead, readRows } from '../database/hot-query';
import { MetadataTransactions } from '../database/metadata-transactions';
import { DeveloperEntity, type DeveloperKind } from './developer.entity';

export type DeveloperIdentity = Pick<DeveloperEntity, 'id' | 'email' | 'kind'>;

const ACTIVE_DEVELOPER: PreparedRead = {
  name: 'developer_active',
  text: 'SELECT id, email, kind FROM developers WHERE id = $1 AND deleted IS NULL',
};

/**
 * The statements on `developers` (habit 15), but for the authentication joins, which stay with
 * DevelopersService. Statements go through the transaction the context carries
 * (MetadataTransactions): inside its withTransaction they join it, outside they run on their own.
 */
@Injectable()
export class DevelopersRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly txHost: MetadataTransactions,
  ) {}

  private get repo(): Repository<DeveloperEntity> {
    return this.txHost.tx.getRepository(DeveloperEntity);
  }

  /**
   * The developer if not deleted. On every authenticated request (the JWT strategy): one indexed
   * statement, raw rows on the pool, no entity hydration. Inside the context's transaction it runs
   * there (a second pool connection per transaction can exhaust the pool).
   */
  async findActive(id: string): Promise<DeveloperIdentity | null> {
    const manager = this.txHost.carried;
    const rows = manager
      ? await manager.query<DeveloperIdentity[]>(ACTIVE_DEVELOPER.text, [id])
      : await readRows<DeveloperIdentity>(this.dataSource, ACTIVE_DEVELOPER, [id]);
    return rows[0] ?? null;
  }

  /** Active developers with these ids, in no particular order. */
  findActiveMany(ids: string[]): Promise<DeveloperIdentity[]> {
    return this.repo.find({
      select: { id: true, email: true, kind: true },
      where: { id: In(ids), deleted: IsNull() },
    });
  }

  /** The active developer with this (normalized) e-mail. */
  findActiveByEmail(email: string): Promise<DeveloperIdentity | null> {
    return this.repo.findOne({
      select: { id: true, email: true, kind: true },
      where: { email, deleted: IsNull() },
    });
  }

  /** The active developer with this (normalized) e-mail, with the password hash. */
  findActiveWithPasswordHash(
    email: string,
  ): Promise<(DeveloperIdentity & Pick<DeveloperEntity, 'passwordHash'>) | null> {
    return this.repo.findOne({
      select: { id: true, email: true, kind: true, passwordHash: true },
      where: { email, deleted: IsNull() },
    });
  }

  /** Whether any developer (deleted ones included) has this (normalized) e-mail. */
  existsWithEmail(email: string): Promise<boolean> {
    return this.repo.exists({ where: { email } });
  }

  create(row: { email: string; kind: DeveloperKind; passwordHash: string | null }): Promise<DeveloperEntity> {
    return this.repo.save(this.repo.create(row));
  }

  /** Replaces the password hash while it is still `checked`. */
  async replacePasswordHash(id: string, checked: string, passwordHash: string): Promise<void> {
    await this.repo.update({ id, passwordHash: checked }, { passwordHash });
  }
}
