import { getQueueToken } from '@nestjs/bull';
import { type FactoryProvider, Logger } from '@nestjs/common';
import type { Queue } from 'bull';
import { ALL_QUEUES } from './queue-names';

const logger = new Logger('Queues');

/**
 * Bull's `queue.process()` returns a promise that settles only when the queue stops processing. It
 * rejects when the queue closes before Redis ever answered (registering the processor was still
 * waiting for the connection: a process started while Redis is down, then stopped), with the last
 * connection error. @nestjs/bull's explorer drops that promise, so the rejection went unhandled (the
 * entry points' shutdown handler logged it; in Jest it failed whichever test ran then). Each queue's
 * `process` is wrapped so that the promise has a handler: a queue that was closing anyway says so
 * at debug level, any other stop is an error in the log (Bull has emitted it as the queue's `error`
 * too).
 */
export function handleProcessRejections(queue: Queue): void {
  const process = queue.process.bind(queue) as (...args: unknown[]) => Promise<void>;
  queue.process = ((...args: unknown[]) => {
    const processing = process(...args);
    processing.catch((err: unknown) => {
      const closing = (queue as Queue & { closing?: Promise<void> }).closing !== undefined;
      const fields = { queue: queue.name, err: err instanceof Error ? err.message : String(err) };
      if (closing) logger.debug(fields, 'queue closed before its processor ever started');
      else logger.error(fields, 'queue stopped processing');
    });
    return processing;
  }) as Queue['process'];
}

/**
 * Wraps every queue's `process` when the queues are made, so before @nestjs/bull's explorer
 * registers the processors (at module init).
 */
export const processRejectionsProvider: FactoryProvider = {
  provide: 'QUEUE_PROCESS_REJECTIONS_HANDLED',
  inject: ALL_QUEUES.map((name) => getQueueToken(name)),
  useFactory: (...queues: Queue[]) => {
    queues.forEach(handleProcessRejections);
    return true;
  },
};
