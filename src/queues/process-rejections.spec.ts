import Queue from 'bull';
import type Redis from 'ioredis';
import { closeRedis, openRedis } from '../common/redis/redis-connection';
import { handleProcessRejections } from './process-rejections';

/**
 * A queue on a Redis that refuses connections, with clients made as QueuesModule makes them. Bull
 * does not track clients made by `createClient` (`queue.clients` stays empty): they are kept here,
 * to be cut after each test, or they would go on reconnecting in this Jest worker's later spec files.
 */
function queueOnDeadRedis(clients: Redis[]): Queue.Queue {
  const queue = new Queue('process-rejections-spec', {
    createClient: (type) => {
      const client = openRedis('redis://127.0.0.1:1', {
        ...(type === 'client' ? {} : { maxRetriesPerRequest: null, enableReadyCheck: false }),
      });
      clients.push(client);
      return client;
    },
  });
  queue.on('error', () => undefined);
  return queue;
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  if (!condition()) throw new Error('condition not met in 2 s');
}

/**
 * What ioredis does when a queue closes while one of its connections, which never answered, is in
 * the middle of a connection attempt (rare; likelier on a busy event loop): 'end', after its first
 * error. Then a moment for whatever waited on that connection to settle.
 */
async function endMidAttempt(connection: Redis): Promise<void> {
  let failedOnce = false;
  connection.on('error', () => (failedOnce = true));
  await until(() => failedOnce);
  connection.emit('end');
  await new Promise((resolve) => setTimeout(resolve, 50));
}

describe('processors of a queue whose Redis never answered', () => {
  let queue: Queue.Queue;
  let clients: Redis[];

  beforeEach(() => {
    clients = [];
    queue = queueOnDeadRedis(clients);
  });

  afterEach(async () => {
    // Bull's close waits for a connection that never comes: bounded, then the clients are cut.
    await Promise.race([
      queue.close().catch(() => undefined),
      new Promise((resolve) => setTimeout(resolve, 1000).unref()),
    ]);
    await Promise.all(clients.map(closeRedis));
  });

  // Jest fails the running test on an unhandled rejection, with its message: without the handler this
  // test fails with "connect ECONNREFUSED 127.0.0.1:1", as the health spec intermittently did.
  it('leave no unhandled rejection when the queue stops before they ever started', async () => {
    handleProcessRejections(queue);
    const processing = queue.process('job', 1, () => Promise.resolve());
    // Bull's wait for the subscriber connection rejects with the last connection error.
    await endMidAttempt((queue as Queue.Queue & { eclient: Redis }).eclient);
    await expect(processing).rejects.toThrow(/ECONNREFUSED/);
  });

  // Bull names the worker's connection when a processor is set (`setWorkerName`, its promise
  // dropped): it waits for the queue's command connection, and rejects the same way when that one
  // ends without ever answering. Without the handler this test fails with "connect ECONNREFUSED
  // 127.0.0.1:1", as the health spec's Redis-down tests did now and then (one per processor).
  it('leave no unhandled rejection when the command connection ends before it ever answered', async () => {
    handleProcessRejections(queue);
    const processing = queue.process('job', 1, () => Promise.resolve());
    processing.catch(() => undefined);
    await endMidAttempt((queue as Queue.Queue & { client: Redis }).client);
  });
});
