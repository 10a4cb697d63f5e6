import { Global, Injectable, Module } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { AsyncLocalStorage } from 'node:async_hooks';
import type { DataSource, EntityManager, EntityTarget, ObjectLiteral, SelectQueryBuilder } from 'typeorm';

/**
 * The metadata database's transaction, carried by the async context (habit 15) instead of an
 * EntityManager handed from module to module: `withTransaction` opens one (or joins the one the
 * context already carries), and repositories run on `tx`, which is that transaction's manager
 * inside it and the pool's outside. Works alike in requests, queue processors, reconciler passes
 * and the CLI, since nothing but a transaction puts anything in the context.
 *
 * Our own rather than nestjs-cls's TransactionHost: nestjs-cls registers a global guard and a
 * global interceptor even when neither is mounted (no-ops), and one global interceptor puts every
 * request through Nest's RxJS pipeline: measured 203–208 → 223–226 µs of CPU per read and the read
 * ratio 0.89 → 0.82–0.84 (`npm run bench`), for nothing this service uses.
 */
@Injectable()
export class MetadataTransactions {
  private readonly context = new AsyncLocalStorage<EntityManager>();

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The manager of the transaction the context carries, or the pool's when there is none. */
  get tx(): EntityManager {
    return this.context.getStore() ?? this.dataSource.manager;
  }

  /**
   * The manager of the transaction the context carries, or undefined when there is none: for a hot
   * read that runs raw on the pool outside a transaction but must join one (not wait for a second
   * connection while the transaction holds one) inside it.
   */
  get carried(): EntityManager | undefined {
    return this.context.getStore();
  }

  /**
   * The manager of the transaction the context carries, for what only holds inside one (a row or
   * advisory lock, taken by a lone statement, would be released at once): throws, naming `what`,
   * when there is none.
   */
  required(what: string): EntityManager {
    const manager = this.context.getStore();
    if (!manager) throw new Error(`${what} needs a transaction in the context`);
    return manager;
  }

  /**
   * A query on `entity` whose rows stay locked (FOR UPDATE, or FOR SHARE with `pessimistic_read`) for
   * the rest of the context's transaction, refused (naming `what`) outside a transaction, where a
   * lone statement's lock would end with it. A raw locking read goes through `required` the same way.
   */
  rowLocking<E extends ObjectLiteral>(
    entity: EntityTarget<E>,
    alias: string,
    what: string,
    mode: 'pessimistic_write' | 'pessimistic_read' = 'pessimistic_write',
  ): SelectQueryBuilder<E> {
    return this.required(what).getRepository(entity).createQueryBuilder(alias).setLock(mode);
  }

  /** Runs `work` in a transaction: the one the context carries, or a new one committed when it ends. */
  withTransaction<T>(work: () => Promise<T>): Promise<T> {
    if (this.context.getStore()) return work();
    return this.withNewTransaction(work);
  }

  /**
   * Runs `work` in a transaction of its own, committed when it ends, even inside another: for work
   * whose outcome must stand whatever the caller's transaction does (a row later steps rely on, a
   * commit a job is dispatched after, a process-wide registration).
   */
  withNewTransaction<T>(work: () => Promise<T>): Promise<T> {
    return this.dataSource.transaction((manager) => this.context.run(manager, work));
  }
}

@Global()
@Module({ providers: [MetadataTransactions], exports: [MetadataTransactions] })
export class MetadataTransactionsModule {}
