import type { ValueTransformer } from 'typeorm';

/** PostgreSQL `numeric` arrives as a string (exactness); the API speaks JSON numbers. */
export const numericTransformer: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | null) => (value === null ? null : Number(value)),
};
