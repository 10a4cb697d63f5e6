import { getQueueToken } from '@nestjs/bull';
import { type FactoryProvider, Logger } from '@nestjs/common';
import type { Queue } from 'bull';
import { ALL_QUEUES } from './queue-names';
import { messageOf } from '../common/errors/message-of';

const logger = new Logger('Queues');

/**
 * Two promises Bull makes when a processor is registered can reject when Redis never answered,
 * with the last connection error, and nobody handled them: in Jest such a rejection fails whichever
 * test runs then, and the entry points' shutdown handler logged it as unhandled.
 * - `queue.process()` settles only when the queue stops processing; it rejects when the queue closes
 *   before Redis ever answered (the registration was still waiting for the connection: a process
 *   started while Redis is down, then stopped). @nestjs/bull's explorer drops it.
 * - `queue.setWorkerName()`, which `process()` calls to name the worker's connection, waits for the
 *   queue's command connection and rejects when that connection ends without ever being ready (it
 *   was in the middle of a connection attempt when the process shut down). Bull drops it.
 * Each queue's two are wrapped so that their promises have a handler: a queue that was closing anyway
 * says so at debug level, any other stop is an error in the log (Bull has emitted it as the queue's
 * `error` too).
 */
export function handleProcessRejections(queue: Queue): void {
  const closing = () => (queue as Queue & { closing?: Promise<void> }).closing !== undefined;
  const process = queue.process.bind(queue) as (...args: unknown[]) => Promise<void>;
  queue.process = ((...args: unknown[]) => {
    const processing = process(...args);
    processing.catch((err: unknown) => {
      if (closing()) logger.debug(fieldsOf(queue, err), 'queue closed before its processor ever started');
      else logger.error(fieldsOf(queue, err), 'queue stopped processing');
    });
    return processing;
  }) as Queue['process'];
  const named = queue as Queue & { setWorkerName(): Promise<unknown> };
  const setWorkerName = named.setWorkerName.bind(queue);
  named.setWorkerName = () => {
    const naming = setWorkerName();
    naming.catch((err: unknown) => {
      if (closing()) logger.debug(fieldsOf(queue, err), "queue closed before its worker's connection was named");
      else logger.warn(fieldsOf(queue, err), "the worker's connection could not be named");
    });
    return naming;
  };
}

function fieldsOf(queue: Queue, err: unknown): { queue: string; err: string } {
  return { queue: queue.name, err: messageOf(err) };
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
