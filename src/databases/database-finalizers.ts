import { Injectable } from '@nestjs/common';
import type { DatabaseEntity } from './database.entity';

/**
 * What other modules must finish when a deleted database is finalized (credentials mark their roles
 * dropped, compute finalizes its instances, instant databases expire an unclaimed code). Each runs inside the finalization's transaction, which
 * the context carries (MetadataTransactions: a finalizer's statements join it), after the physical
 * database and its roles are gone, and must be idempotent: a failure rolls the finalization back
 * and it is retried as a whole.
 */
export type DatabaseFinalizer = (database: DatabaseEntity) => Promise<void>;

@Injectable()
export class DatabaseFinalizers {
  private readonly finalizers = new Map<string, DatabaseFinalizer>();

  register(name: string, finalizer: DatabaseFinalizer): void {
    this.finalizers.set(name, finalizer);
  }

  async runAll(database: DatabaseEntity): Promise<void> {
    for (const finalizer of this.finalizers.values()) await finalizer(database);
  }
}
