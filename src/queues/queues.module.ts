import { BullModule } from '@nestjs/bull';
import { BeforeApplicationShutdown, Global, Injectable, Module, OnApplicationShutdown } from '@nestjs/common';
import type Redis from 'ioredis';
import { closeRedis, openRedis } from '../common/redis/redis-connection';
import { AppConfig } from '../config/app-config';
import { JobDispatcher } from './job-dispatcher';
import { processRejectionsProvider } from './process-rejections';
import { ALL_QUEUES } from './queue-names';
import { Reconciler } from './reconciler';

/**
 * Every Redis connection one application's queues open. Bull's own close waits for a connection
 * that may never come (Redis down) and leaves reconnect timers behind; shutdown disconnects all of
 * them. One set per application (a provider, not a module-level constant), so an application that
 * shuts down leaves the connections of another in the same process alone (tests run several).
 */
@Injectable()
class RedisConnections {
  private readonly clients = new Set<Redis>();

  add(client: Redis): void {
    this.clients.add(client);
  }

  closeAll(): Promise<void[]> {
    const clients = [...this.clients];
    this.clients.clear();
    return Promise.all(clients.map(closeRedis));
  }
}

@Module({ providers: [RedisConnections], exports: [RedisConnections] })
class RedisConnectionsModule {}

@Global()
@Module({
  imports: [
    BullModule.forRootAsync({
      imports: [RedisConnectionsModule],
      inject: [AppConfig, RedisConnections],
      useFactory: (config: AppConfig, connections: RedisConnections) => ({
        prefix: config.env.QUEUE_PREFIX,
        createClient: (type) => {
          const client = openRedis(config.env.REDIS_URL, {
            // Blocking and subscriber connections must not give up on a command (Bull's requirement).
            ...(type === 'client' ? {} : { maxRetriesPerRequest: null, enableReadyCheck: false }),
            lazyConnect: false,
          });
          connections.add(client);
          return client;
        },
      }),
    }),
    BullModule.registerQueue(...ALL_QUEUES.map((name) => ({ name }))),
    RedisConnectionsModule,
  ],
  providers: [JobDispatcher, Reconciler, processRejectionsProvider],
  exports: [BullModule, JobDispatcher, Reconciler],
})
export class QueuesModule implements BeforeApplicationShutdown, OnApplicationShutdown {
  constructor(
    private readonly jobs: JobDispatcher,
    private readonly connections: RedisConnections,
  ) {}

  /**
   * With Redis away, Bull's graceful close (which @nestjs/bull runs for each queue, unbounded) waits
   * for the job in flight and then for its result's write to give up on Redis, each command through
   * its reconnection attempts: 41 s with an e-mail being sent, past a 30 s grace period. Then nothing
   * a job does can be recorded in Redis anyway, so the queues are closed first without waiting for
   * their jobs; a job cut short runs again as stalled (processors are idempotent), as after a crash.
   */
  async beforeApplicationShutdown(): Promise<void> {
    const queues = ALL_QUEUES.map((name) => this.jobs.queue(name));
    if (queues.some((queue) => queue.client.status !== 'ready')) {
      await Promise.race([
        Promise.all(queues.map((queue) => queue.close(true))),
        new Promise((resolve) => setTimeout(resolve, 2000).unref()),
      ]);
      return;
    }
    // Let each queue's processors finish their current job and take no other (a local pause: the
    // queue stays open, so requests still in flight enqueue as usual) here, before any module's
    // onApplicationShutdown: Nest runs those from the root module down, so the mail transport and
    // the pools a job uses would close under it first.
    const pausing = Promise.all(queues.map((queue) => queue.pause(true)));
    await Promise.race([pausing, new Promise((resolve) => setTimeout(resolve, 10000).unref())]);
  }

  async onApplicationShutdown(): Promise<void> {
    // After the HTTP server has let its requests finish: close the queues (no job runs any more;
    // Bull reconnects its blocking client while closing), then make sure nothing is left connected
    // or reconnecting.
    const closing = Promise.all(ALL_QUEUES.map((name) => this.jobs.queue(name).close()));
    await Promise.race([closing, new Promise((resolve) => setTimeout(resolve, 10000).unref())]);
    await this.connections.closeAll();
  }
}
