import type { AppConfig } from '../config/app-config';
import { Reconciler } from './reconciler';

describe('Reconciler.runAfresh (the pass when Redis is back)', () => {
  it('runs a pass after the one under way, and none once the application is shutting down', async () => {
    const reconciler = new Reconciler({} as AppConfig);
    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let runs = 0;
    reconciler.register('task', async () => {
      runs++;
      order.push(`start ${runs}`);
      if (runs === 1) await held;
      order.push(`end ${runs}`);
    });

    const underWay = reconciler.runOnce();
    const afresh = reconciler.runAfresh();
    release();
    await Promise.all([underWay, afresh]);
    expect(order).toEqual(['start 1', 'end 1', 'start 2', 'end 2']);

    await reconciler.onApplicationShutdown();
    await reconciler.runAfresh();
    expect(runs).toBe(2);
    expect(reconciler.stats.passes).toBe(2);
  });
});

describe('Reconciler at shutdown', () => {
  it('ends the pass under way after its current task: the tasks after it wait for the next process', async () => {
    const reconciler = new Reconciler({} as AppConfig);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const ran: string[] = [];
    reconciler.register('first', async () => {
      ran.push('first');
      await held;
    });
    reconciler.register('second', () => {
      ran.push('second');
      return Promise.resolve();
    });

    const pass = reconciler.runOnce();
    const shutdown = reconciler.onApplicationShutdown();
    release();
    await Promise.all([pass, shutdown]);
    expect(ran).toEqual(['first']);
    // An unfinished pass is not counted as one.
    expect(reconciler.stats.passes).toBe(0);
  });
});
