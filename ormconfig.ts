import { DataSource } from 'typeorm';
import { dataSourceOptions } from './src/database/data-source-options';

/** The DataSource the TypeORM migration CLI uses (run against the compiled dist/ormconfig.js). */
export default new DataSource(
  dataSourceOptions(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/control_plane'),
);
