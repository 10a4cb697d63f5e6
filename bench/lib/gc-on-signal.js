/**
 * Preloaded into the service by the bench only (`node --expose-gc --require bench/lib/gc-on-signal.js`):
 * SIGUSR2 runs full garbage collections so the bench can read a settled RSS from /proc. First two
 * regular full GCs, after which V8 still holds the pages it pools for reuse (`--trace-gc` shows them
 * as `pooled: … MB`: 100–280 MB under the bench's load); their RSS goes to BENCH_MEMORY_FILE. Then one
 * memory-reducing full GC (`flavor: 'last-resort'`, what V8's memory reducer does once a process
 * idles), which returns those pages to the system: the RSS the bench reads then is what the process
 * really retains. The `bench-memory` line on standard error (service log) says where the memory is.
 * Nothing else changes in the process (SIGUSR2 is not used by the service; SIGUSR1 would start the
 * inspector).
 */
const { writeFileSync } = require('node:fs');

process.on('SIGUSR2', () => {
  if (typeof global.gc !== 'function') return;
  global.gc();
  global.gc();
  const regular = process.memoryUsage();
  global.gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  const m = process.memoryUsage();
  if (process.env.BENCH_MEMORY_FILE)
    writeFileSync(process.env.BENCH_MEMORY_FILE, JSON.stringify({ regularRss: regular.rss }));
  const mib = (n) => Math.round(n / 1048576);
  process.stderr.write(
    `bench-memory rss=${mib(m.rss)} (after regular full GCs: ${mib(regular.rss)}, heapTotal ${mib(regular.heapTotal)}) heapTotal=${mib(m.heapTotal)} heapUsed=${mib(m.heapUsed)} external=${mib(m.external)} arrayBuffers=${mib(m.arrayBuffers)} MiB\n`,
  );
});
