/**
 * Preloaded into the service by the bench only (`node --expose-gc --require bench/lib/gc-on-signal.js`):
 * SIGUSR2 runs a full garbage collection, so the bench can read a settled RSS from /proc. Nothing
 * else changes in the process (SIGUSR2 is not used by the service; SIGUSR1 would start the inspector).
 */
process.on('SIGUSR2', () => {
  if (typeof global.gc === 'function') {
    global.gc();
    global.gc();
  }
});
