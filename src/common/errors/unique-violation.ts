import { QueryFailedError } from 'typeorm';

/** Whether a metadata query failed on a unique constraint (PostgreSQL 23505). */
export function isUniqueViolation(err: unknown): boolean {
  return err instanceof QueryFailedError && (err.driverError as { code?: string }).code === '23505';
}
