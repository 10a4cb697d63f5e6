import { BullModule } from '@nestjs/bull';
import { Global, Module, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { AppConfig } from '../config/app-config';
import { JobDispatcher } from './job-dispatcher';
import { processRejectionsProvider } from './process-rejections';
import { ALL_QUEUES } from './queue-names';
import { Reconciler } from './reconciler';

/**
 * Every Redis connection the queues open. Bull's own close waits for a connection that may never
 * come (Redis down) and leaves reconnect timers behind; shutdown disconnects all of them.
 */
const redisClients = new Set<Redis>();

@Global()
@Module({
  imports: [
    BullModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        prefix: config.env.QUEUE_PREFIX,
        createClient: (type) => {
          const client = new Redis(config.env.REDIS_URL, {
            // Blocking and subscriber connections must not give up on a command (Bull's requirement).
            ...(type === 'client' ? {} : { maxRetriesPerRequest: null, enableReadyCheck: false }),
            lazyConnect: false,
          });
          client.on('error', () => undefined); // connection errors surface through /health and job retries
          redisClients.add(client);
          return client;
        },
      }),
    }),
    BullModule.registerQueue(...ALL_QUEUES.map((name) => ({ name }))),
  ],
  providers: [JobDispatcher, Reconciler, processRejectionsProvider],
  exports: [BullModule, JobDispatcher, Reconciler],
})
export class QueuesModule implements OnApplicationShutdown {
  constructor(private readonly jobs: JobDispatcher) {}

  async onApplicationShutdown(): Promise<void> {
    // Let each queue finish its current job and close (Bull reconnects its blocking client while
    // doing so), then make sure nothing is left connected or reconnecting.
    const closing = Promise.all(ALL_QUEUES.map((name) => this.jobs.queue(name).close()));
    await Promise.race([closing, new Promise((resolve) => setTimeout(resolve, 10000).unref())]);
    await Promise.all([...redisClients].map((client) => closeClient(client)));
  }
}

/**
 * Closes one Redis connection without failing commands still in flight (a delayed-job timer's
 * query, say): a ready connection gets QUIT, which Redis answers after the pending replies; only
 * what is still open after a moment (or never connected) is cut.
 */
async function closeClient(client: Redis): Promise<void> {
  redisClients.delete(client);
  if (client.status === 'end') return;
  if (client.status === 'ready') {
    await Promise.race([
      client.quit().catch(() => undefined),
      new Promise((resolve) => setTimeout(resolve, 1000).unref()),
    ]);
  }
  // (the status may have changed while QUIT was under way)
  if ((client.status as string) !== 'end') client.disconnect();
}
