import { Reconciler } from '../../src/queues/reconciler';
import { createIsolatedTestApp, eventually, TestApp } from '../support/test-app';

describe('the first reconcile pass after a process starts', () => {
  let t: (TestApp & { metadataUrl: string }) | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('comes RECONCILE_FIRST_PASS_SECONDS after the start, not a whole RECONCILE_INTERVAL_SECONDS later: work lost in a crash is taken up when the process comes back', async () => {
    t = await createIsolatedTestApp({ RECONCILE_INTERVAL_SECONDS: '3600', RECONCILE_FIRST_PASS_SECONDS: '1' });
    const reconciler = t.app.get(Reconciler);
    expect(reconciler.stats.passes).toBe(0);
    await eventually(() => Promise.resolve(reconciler.stats.passes === 1), 10000, 100);
    // Then one every interval: no second pass follows the first.
    await new Promise((r) => setTimeout(r, 1500));
    expect(reconciler.stats.passes).toBe(1);
  }, 30000);

  it('does not come in a process without the queue processors (WORKERS=off)', async () => {
    t = await createIsolatedTestApp({
      WORKERS: 'off',
      RECONCILE_INTERVAL_SECONDS: '3600',
      RECONCILE_FIRST_PASS_SECONDS: '0',
    });
    await new Promise((r) => setTimeout(r, 1500));
    expect(t.app.get(Reconciler).stats.passes).toBe(0);
  }, 30000);
});
