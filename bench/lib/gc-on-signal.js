/**
 * Preloaded into the service by the bench only (`node --expose-gc --require bench/lib/gc-on-signal.js`):
 * SIGUSR2 runs a full garbage collection, so the bench can read a settled RSS from /proc, and writes
 * where the memory is (`bench-memory` line on standard error: V8 heap, external, array buffers) to
 * the service log. Nothing else changes in the process (SIGUSR2 is not used by the service; SIGUSR1
 * would start the inspector).
 */
process.on('SIGUSR2', () => {
  if (typeof global.gc === 'function') {
    global.gc();
    global.gc();
  }
  const mib = (n) => Math.round(n / 1048576);
  const m = process.memoryUsage();
  process.stderr.write(
    `bench-memory rss=${mib(m.rss)} heapTotal=${mib(m.heapTotal)} heapUsed=${mib(m.heapUsed)} external=${mib(m.external)} arrayBuffers=${mib(m.arrayBuffers)} MiB\n`,
  );
});
