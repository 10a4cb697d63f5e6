import { Process, Processor } from '@nestjs/bull';
import { DiscoveryModule, DiscoveryService, MetadataScanner } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { QUEUE_PROCESSORS } from '../queue-processors.module';
import { discoverJobHandlers, JobHandlerCheck, jobHandlerProblems, type JobHandler } from './job-handler-check';
import type { JobRegistry } from './job-registry';

const registry: JobRegistry = {
  BuildThing: { queue: 'things', name: 'build' },
  DropThing: { queue: 'things', name: 'drop' },
  BuildOther: { queue: 'others', name: 'build' },
};

@Processor('things')
class ThingsProcessor {
  @Process('build')
  build(): void {}

  @Process({ name: 'drop', concurrency: 2 })
  drop(): void {}

  helper(): void {}
}

@Processor({ name: 'others' })
class OthersProcessor {
  @Process('build')
  build(): void {}
}

@Processor('others')
class SecondOthersProcessor {
  @Process('build')
  buildAgain(): void {}

  @Process('bogus')
  bogus(): void {}
}

@Processor('others')
class CatchAllProcessor {
  @Process()
  anything(): void {}
}

async function handlersOf(...providers: (new () => object)[]): Promise<JobHandler[]> {
  const app = await Test.createTestingModule({ imports: [DiscoveryModule], providers }).compile();
  try {
    return discoverJobHandlers(app.get(DiscoveryService), app.get(MetadataScanner));
  } finally {
    await app.close();
  }
}

describe('job handler check (every registered job has exactly one handler; the process refuses to start otherwise)', () => {
  it("finds @Process handlers by @nestjs/bull's own decorators (so their metadata keys are the ones it writes)", async () => {
    expect(await handlersOf(ThingsProcessor, OthersProcessor, CatchAllProcessor)).toEqual([
      { queue: 'things', name: 'build', where: 'ThingsProcessor.build' },
      { queue: 'things', name: 'drop', where: 'ThingsProcessor.drop' },
      { queue: 'others', name: 'build', where: 'OthersProcessor.build' },
      { queue: 'others', name: undefined, where: 'CatchAllProcessor.anything' },
    ]);
  });

  it('passes when every job has exactly one handler on its queue', async () => {
    expect(jobHandlerProblems(registry, await handlersOf(ThingsProcessor, OthersProcessor))).toEqual([]);
  });

  it('names a job without a handler (a handler of the same name on another queue does not count)', () => {
    const handlers = [
      { queue: 'things', name: 'build', where: 'ThingsProcessor.build' },
      { queue: 'things', name: 'drop', where: 'ThingsProcessor.drop' },
    ];
    expect(jobHandlerProblems(registry, handlers)).toEqual([
      "job BuildOther ('build' on queue 'others') has no handler",
    ]);
  });

  it('names a job with two handlers, and a handler for a job the registry does not have', async () => {
    const handlers = await handlersOf(ThingsProcessor, OthersProcessor, SecondOthersProcessor);
    expect(jobHandlerProblems(registry, handlers)).toEqual([
      "SecondOthersProcessor.bogus handles 'bogus' on queue 'others', which is not a registered job",
      "job BuildOther ('build' on queue 'others') has 2 handlers: OthersProcessor.build, SecondOthersProcessor.buildAgain",
    ]);
  });

  it('refuses a handler without a job name (it would take every job of its queue)', async () => {
    const handlers = await handlersOf(ThingsProcessor, OthersProcessor, CatchAllProcessor);
    expect(jobHandlerProblems(registry, handlers)).toEqual([
      "CatchAllProcessor.anything has no job name: @Process() without one takes every job of queue 'others'",
    ]);
  });

  it('refuses a registry that names one (queue, job) pair twice', () => {
    const twice: JobRegistry = { ...registry, BuildAgain: { queue: 'things', name: 'build' } };
    const handlers = [
      { queue: 'things', name: 'build', where: 'ThingsProcessor.build' },
      { queue: 'things', name: 'drop', where: 'ThingsProcessor.drop' },
      { queue: 'others', name: 'build', where: 'OthersProcessor.build' },
    ];
    expect(jobHandlerProblems(twice, handlers)).toEqual([
      "jobs BuildThing and BuildAgain are both 'build' on queue 'things'",
    ]);
  });

  it('stops the application from being built, listing what is wrong with the real registry', async () => {
    @Processor('database-lifecycle')
    class PartialProcessor {
      @Process('provision')
      provision(): void {}

      @Process('no-such-job')
      unknown(): void {}
    }
    const building = Test.createTestingModule({
      imports: [DiscoveryModule],
      providers: [PartialProcessor, JobHandlerCheck],
    }).compile();
    await expect(building).rejects.toThrow('The queue processors do not match the job registry');
    await expect(building).rejects.toThrow(
      "job FinalizeDatabaseDeletion ('finalize-deletion' on queue 'database-lifecycle') has no handler",
    );
    await expect(building).rejects.toThrow(
      "PartialProcessor.unknown handles 'no-such-job' on queue 'database-lifecycle', which is not a registered job",
    );
  });

  it("lets the service's own processors be built: their handlers match the registry", async () => {
    const app = await Test.createTestingModule({
      imports: [DiscoveryModule],
      providers: [...QUEUE_PROCESSORS, JobHandlerCheck],
    })
      .useMocker(() => ({}))
      .compile();
    expect(app.get(JobHandlerCheck)).toBeInstanceOf(JobHandlerCheck);
    await app.close();
  });
});
