import { DataSource } from 'typeorm';
import { dataSourceOptions, ensureDatabaseExists, migrateDatabase } from '../../src/database/data-source-options';
import { MIGRATIONS } from '../../src/migrations';
import { unique } from '../databases/support';

/** The URL of an upgrade spec's own metadata database (named after `label`; drop it with dropMetadataDatabase). */
export function upgradeSpecUrl(label: string): string {
  const base = new URL(process.env.DATABASE_URL!);
  base.pathname = `${base.pathname}_${label}_${unique()}`;
  return base.toString();
}

/**
 * An install from before `migration`: the database at `url`, created and migrated up to just before
 * it, for the spec to fill. A data source on it, open (the spec destroys it before upgrading).
 */
export async function installBefore(url: string, migration: (typeof MIGRATIONS)[number]): Promise<DataSource> {
  await ensureDatabaseExists(url);
  const upTo = MIGRATIONS.indexOf(migration);
  if (upTo <= 0) throw new Error(`${migration.name} is not a migration after the first`);
  const previous = new DataSource({ ...dataSourceOptions(url, 1), migrations: MIGRATIONS.slice(0, upTo) });
  await previous.initialize();
  await previous.runMigrations({ transaction: 'each' });
  return previous;
}

/** The install upgraded (every migration run), and a data source on it, open, that can revert them. */
export async function upgraded(url: string): Promise<DataSource> {
  await migrateDatabase(url);
  const db = new DataSource({ ...dataSourceOptions(url, 1), migrations: MIGRATIONS });
  await db.initialize();
  return db;
}

/** Reverts an upgraded install to just before `migration`: its down and every later migration's. */
export async function revertBefore(db: DataSource, migration: (typeof MIGRATIONS)[number]): Promise<void> {
  for (let i = MIGRATIONS.length; i > MIGRATIONS.indexOf(migration); i--) {
    await db.undoLastMigration({ transaction: 'each' });
  }
}
