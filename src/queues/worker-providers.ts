import type { Provider } from '@nestjs/common';

/**
 * Queue processors are registered only where workers run: in `src/worker.ts`, and in the API
 * process unless WORKERS=off. Read at module definition time, before Nest wires the modules.
 */
export function workerProviders(...processors: Provider[]): Provider[] {
  return (process.env.WORKERS ?? 'on') === 'off' ? [] : processors;
}
