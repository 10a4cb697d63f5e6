import { createHook } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import { closeRedis, openRedis } from './redis-connection';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await sleep(10);
  if (!condition()) throw new Error('condition not met in 2 s');
}

/**
 * Runs `action`, then waits a moment, and returns how many of the timers started meanwhile are still
 * pending and keep the process alive (not unref'd): what would hold a Jest worker past its 0.5 s
 * grace after its last spec file.
 */
async function timersLeftPendingBy(action: () => Promise<void>): Promise<number> {
  const pending = new Map<number, NodeJS.Timeout>();
  const hook = createHook({
    init: (id, type, _trigger, resource) => type === 'Timeout' && pending.set(id, resource as NodeJS.Timeout),
    destroy: (id) => pending.delete(id),
  }).enable();
  try {
    await action();
    let wait: NodeJS.Timeout | undefined;
    await new Promise((resolve) => (wait = setTimeout(resolve, 300)));
    return [...pending.values()].filter((timer) => timer !== wait && timer.hasRef()).length;
  } finally {
    hook.disable();
  }
}

describe('Redis connections', () => {
  it('once closed while Redis is down, try no more and keep the process alive no longer than a moment', async () => {
    const client = openRedis('redis://127.0.0.1:1', { retryStrategy: () => 20 });
    let attempts = 0;
    client.on('error', () => attempts++);
    await until(() => attempts >= 2 && client.status === 'reconnecting');

    let attemptsAtClose = 0;
    const left = await timersLeftPendingBy(async () => {
      await closeRedis(client);
      attemptsAtClose = attempts;
    });

    expect(left).toBe(0); // ioredis's default keeps one for 2 s, though the socket is long closed
    expect(attempts).toBe(attemptsAtClose);
  });

  it('once closed while ready, have answered the commands sent before, and keep nothing alive', async () => {
    const client: Redis = openRedis('redis://127.0.0.1:6379', {});
    await until(() => client.status === 'ready');
    const key = `redis-connection-spec:${randomUUID()}`;

    const written = client.set(key, 'kept', 'EX', 60);
    const left = await timersLeftPendingBy(async () => {
      await closeRedis(client);
      expect(client.status).toBe('end');
    });

    await expect(written).resolves.toBe('OK');
    expect(left).toBe(0);
    const reader = openRedis('redis://127.0.0.1:6379', {});
    try {
      expect(await reader.get(key)).toBe('kept');
    } finally {
      await closeRedis(reader);
    }
  });
});
