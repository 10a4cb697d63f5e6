import { Injectable, Type } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { JOBS, type JobRegistry } from './job-registry';

/**
 * The metadata @nestjs/bull's decorators write (its dist/bull.constants.js): `@Processor` puts its
 * options (`{ name: queue }`) on the class under BULL_MODULE_QUEUE, `@Process` its options
 * (`{ name?, concurrency? }`) on the method under BULL_MODULE_QUEUE_PROCESS. The package exports
 * neither the keys nor its BullMetadataAccessor (its exports map has `.` only), so they are
 * repeated here; job-handler-check.spec.ts reads them back from the real decorators, so a release
 * that renames them fails that test instead of failing every boot.
 */
const BULL_MODULE_QUEUE = 'bull:module_queue';
const BULL_MODULE_QUEUE_PROCESS = 'bull:module_queue_process';

/** One `@Process` method of a `@Processor` class. */
export interface JobHandler {
  /** The processor's queue (undefined: `@Processor()` without a name, Bull's default queue). */
  queue: string | undefined;
  /** The job name it handles (undefined: `@Process()` without a name takes every job of its queue). */
  name: string | undefined;
  /** `Class.method`, for the message. */
  where: string;
}

const reflector = new Reflector();

/**
 * Every `@Process` handler among the providers of the application being built. Runs before Bull's
 * own explorer (which starts processing), so it reads the classes, not the instances: a processor
 * is a class provider here; a factory-made one is seen only once built (as Bull itself does).
 */
export function discoverJobHandlers(discovery: DiscoveryService, scanner: MetadataScanner): JobHandler[] {
  const handlers: JobHandler[] = [];
  for (const wrapper of discovery.getProviders()) {
    // As @nestjs/bull's explorer does: a `useValue` or `useFactory` provider's class is its instance's.
    const instance = wrapper.instance as object | null | undefined;
    const type = (!wrapper.metatype || wrapper.inject ? instance?.constructor : wrapper.metatype) as Type | undefined;
    if (!type) continue;
    // (A class provided by two modules is two processors to Bull, so it is counted twice.)
    const processor = reflector.get<{ name?: string } | undefined>(BULL_MODULE_QUEUE, type);
    if (!processor) continue;
    const prototype = type.prototype as Record<string, unknown>;
    for (const method of scanner.getAllMethodNames(prototype)) {
      const handler = prototype[method];
      if (typeof handler !== 'function') continue;
      const options = reflector.get<{ name?: string } | undefined>(BULL_MODULE_QUEUE_PROCESS, handler);
      if (!options) continue;
      handlers.push({ queue: processor.name, name: options.name, where: `${type.name}.${method}` });
    }
  }
  return handlers;
}

/**
 * What keeps the handlers from matching the registry: each registered job must have exactly one
 * handler (`@Process(name)` on a `@Processor(queue)`), and every handler must be for a registered
 * job. An empty list means they match.
 */
export function jobHandlerProblems(registry: JobRegistry, handlers: readonly JobHandler[]): string[] {
  const problems: string[] = [];
  const key = (queue: string | undefined, name: string | undefined) => JSON.stringify([queue ?? null, name ?? null]);
  const registered = new Map<string, string>();
  for (const [job, { queue, name }] of Object.entries(registry)) {
    const other = registered.get(key(queue, name));
    if (other) problems.push(`jobs ${other} and ${job} are both '${name}' on queue '${queue}'`);
    else registered.set(key(queue, name), job);
  }
  const byJob = new Map<string, JobHandler[]>();
  for (const handler of handlers) {
    if (handler.queue === undefined) {
      problems.push(`${handler.where} is on a @Processor() without a queue name`);
      continue;
    }
    if (handler.name === undefined) {
      problems.push(
        `${handler.where} has no job name: @Process() without one takes every job of queue '${handler.queue}'`,
      );
      continue;
    }
    const job = registered.get(key(handler.queue, handler.name));
    if (!job) {
      problems.push(
        `${handler.where} handles '${handler.name}' on queue '${handler.queue}', which is not a registered job`,
      );
      continue;
    }
    byJob.set(job, [...(byJob.get(job) ?? []), handler]);
  }
  for (const job of new Set(registered.values())) {
    const { queue, name } = registry[job];
    const found = byJob.get(job) ?? [];
    if (found.length === 0) problems.push(`job ${job} ('${name}' on queue '${queue}') has no handler`);
    if (found.length > 1) {
      problems.push(
        `job ${job} ('${name}' on queue '${queue}') has ${found.length} handlers: ${found.map((h) => h.where).join(', ')}`,
      );
    }
  }
  return problems;
}

/** Throws, naming every problem, unless the handlers match the registry. */
export function assertJobHandlersMatch(registry: JobRegistry, handlers: readonly JobHandler[]): void {
  const problems = jobHandlerProblems(registry, handlers);
  if (problems.length) {
    throw new Error(
      `The queue processors do not match the job registry (src/queues/job-registry.ts):\n${problems
        .map((p) => `  - ${p}`)
        .join('\n')}`,
    );
  }
}

/**
 * Part of what a process that runs the queue processors boots (QueueProcessorsModule): it refuses
 * to start unless every registered job has exactly one handler and every handler a registered job.
 * The check runs while the providers are built, before any lifecycle hook, hence before Bull's
 * explorer (a global module's hook, so among the first) hands the handlers to the queues: a job
 * without a handler would otherwise fail its attempts ("Missing process handler").
 */
@Injectable()
export class JobHandlerCheck {
  constructor(discovery: DiscoveryService, scanner: MetadataScanner) {
    assertJobHandlersMatch(JOBS, discoverJobHandlers(discovery, scanner));
  }
}
