/**
 * Plumbing of the bench: CPU pinning, child processes, load, statistics, the SMTP sink, the table.
 */
const { spawn, spawnSync } = require('node:child_process');
const { existsSync, openSync, readFileSync, readdirSync } = require('node:fs');
const { cpus } = require('node:os');
const autocannon = require('autocannon');
const { Agent, request } = require('node:http');
const { createServer } = require('node:net');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Servers on core 0, the load generator (this process, autocannon, the SMTP sink) on core 1, so
 * the two never compete for a core. PostgreSQL and Redis are not pinned: both sides share them.
 */
function cpuPinning() {
  if (cpus().length < 2) return { server: null, warning: 'only one CPU: servers and load share it' };
  if (spawnSync('taskset', ['--version']).status !== 0) {
    return {
      server: null,
      warning: 'taskset (util-linux) not found: servers and load are not pinned to separate cores',
    };
  }
  const pinned = spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)]);
  if (pinned.status !== 0)
    return { server: null, warning: `taskset could not pin the load generator: ${pinned.stderr}` };
  return { server: '0', warning: null };
}

/**
 * Starts `node <args>` (on the server core when pinning works), output appended to `logFile`.
 * With `announcesPort`, waits for the child's `listening <port>` line and returns the port.
 */
function startNode(args, { env, logFile, pinTo, announcesPort = false }) {
  const log = openSync(logFile, 'a');
  const exe = process.env.BENCH_SERVICE_FLAGS ? ['stdbuf', '-oL', process.execPath] : [process.execPath];
  const [cmd, argv] = pinTo ? ['taskset', ['-c', pinTo, ...exe, ...args]] : [exe[0], [...exe.slice(1), ...args]];
  const child = spawn(cmd, argv, { env, stdio: ['ignore', announcesPort ? 'pipe' : log, log] });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const port = !announcesPort
    ? Promise.resolve(null)
    : new Promise((resolve, reject) => {
        let buffered = '';
        child.stdout.on('data', (chunk) => {
          buffered += chunk;
          const match = /listening (\d+)/.exec(buffered);
          if (match) resolve(Number(match[1]));
        });
        void exited.then(({ code }) =>
          reject(new Error(`${args[0]} exited (${code}) before listening; see ${logFile}`)),
        );
      });
  return { child, exited, port };
}

async function stopNode(proc, graceMs = 10_000) {
  if (!proc || proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill('SIGTERM');
  const done = await Promise.race([proc.exited, sleep(graceMs).then(() => null)]);
  if (!done) {
    proc.child.kill('SIGKILL');
    await proc.exited;
  }
}

/** Resident set size of a process in bytes (Linux /proc). */
function rssOf(pid) {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]) * 1024;
}

/** Whether the kernel keeps per-thread run times (`/proc/<pid>/task/<tid>/schedstat`). */
const SCHEDSTAT = existsSync('/proc/self/schedstat');

/**
 * CPU seconds a process has used so far: the sum over its threads of the nanoseconds each has run
 * (schedstat), so that a hundred e-mails or ten creates are measured to the microsecond; without
 * schedstat, user + system from `/proc/<pid>/stat`, in clock ticks of 10 ms. (A thread that exits
 * takes its nanoseconds with it; the servers' threads, V8's and libuv's, live as long as the process.)
 */
function cpuSecondsOf(pid) {
  if (!SCHEDSTAT) {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  }
  let nanos = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      nanos += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch (err) {
      if (err.code !== 'ENOENT') throw err; // the thread ended between the listing and the read
    }
  }
  return nanos / 1e9;
}

/**
 * Runs `fn` and returns its result with the CPU microseconds (user + system) process `pid` used
 * meanwhile: a measure of the work done that another process's load on the machine barely moves.
 */
async function cpuMicrosDuring(pid, fn) {
  const before = cpuSecondsOf(pid);
  const result = await fn();
  return { result, cpuMicros: (cpuSecondsOf(pid) - before) * 1e6 };
}

/** Runs `fn` (an autocannon run) and adds to its result the server's CPU microseconds per request. */
async function withCpuPerRequest(pid, fn) {
  const { result: r, cpuMicros } = await cpuMicrosDuring(pid, fn);
  r.cpuMicrosPerRequest = cpuMicros / r.requests.total;
  return r;
}

function cannon(options) {
  return new Promise((resolve, reject) => {
    autocannon({ timeout: 30, ...options }, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

/** One autocannon run that must answer only 2xx. */
async function load(options) {
  const r = await cannon(options);
  if (r.errors || r.timeouts || r.non2xx) {
    throw new Error(
      `${options.url}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts out of ${r.requests.total}`,
    );
  }
  return r;
}

/**
 * Open-loop load at a fixed rate: request i is due at start + i / rate, whatever the answers before
 * it did, over `connections` keep-alive connections (a request due while all are busy waits for
 * the next free one, as wrk2 does). Latency is measured from the time a request was due, not from
 * when it could be sent, so a stall counts for every request it delays (no coordinated omission).
 * autocannon's `overallRate` is not this: each connection sends back to back until its budget for
 * the second is spent, then waits for the next second (bursts).
 */
async function fixedRate({ url, headers = {}, rate, seconds, connections }) {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const total = Math.round(rate * seconds);
  const latencies = [];
  let failures = 0;
  const start = performance.now();
  await new Promise((resolve) => {
    let sent = 0;
    let done = 0;
    const finish = (due, ok) => {
      latencies.push(performance.now() - due);
      if (!ok) failures++;
      if (++done === total) resolve();
    };
    const tick = () => {
      const now = performance.now();
      while (sent < total && start + (sent * 1000) / rate <= now) {
        const due = start + (sent * 1000) / rate;
        sent++;
        const send = (retry) => {
          const req = request(url, { agent, headers }, (res) => {
            res.resume();
            res.on('end', () => finish(due, res.statusCode === 200));
          });
          // A kept-alive socket the server closed as the request went out: send it again, as
          // Node's documentation advises for idempotent requests (its latency still counts from due).
          req.on('error', (err) =>
            retry && req.reusedSocket && err.code === 'ECONNRESET' ? send(false) : finish(due, false),
          );
          req.end();
        };
        send(true);
      }
      if (sent < total) setTimeout(tick, 1);
    };
    tick();
  });
  agent.destroy();
  if (failures) throw new Error(`${url}: ${failures} of ${total} requests failed at a fixed ${rate} req/s`);
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return {
    requests: { total, average: total / ((performance.now() - start) / 1000) },
    latency: { p50: at(0.5), p99: at(0.99) },
  };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Runs A then B, `rounds` times (A B A B …): drift on a shared machine hits both sides alike. */
async function interleave(rounds, a, b) {
  const ours = [];
  const baseline = [];
  for (let i = 0; i < rounds; i++) {
    ours.push(await a(i));
    baseline.push(await b(i));
  }
  return { ours, baseline };
}

/**
 * An in-process SMTP sink that accepts every message and counts them per recipient tag (`tag-<n>@…`).
 * Hand-written on node:net rather than smtp-server: smtp-server holds every new connection for
 * 100 ms before its greeting (early-talker detection, not configurable), and nodemailer opens one
 * connection per message, so that pause would dominate both sides and hide the difference measured.
 */
async function startSmtpSink() {
  const counts = new Map();
  const waiters = [];
  const delivered = (recipients) => {
    for (const address of recipients) {
      const tag = address.replace(/-\d+@.*$/, '');
      counts.set(tag, (counts.get(tag) ?? 0) + 1);
    }
    for (const w of [...waiters]) {
      if ((counts.get(w.tag) ?? 0) >= w.count) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(performance.now());
      }
    }
  };
  const server = createServer((socket) => {
    socket.setNoDelay(true);
    socket.on('error', () => undefined);
    let buffer = '';
    let inData = false;
    let recipients = [];
    socket.write('220 bench-sink ESMTP\r\n');
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1');
      for (;;) {
        if (inData) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end < 0) return;
          buffer = buffer.slice(end + 5);
          inData = false;
          delivered(recipients);
          recipients = [];
          socket.write('250 OK queued\r\n');
          continue;
        }
        const eol = buffer.indexOf('\r\n');
        if (eol < 0) return;
        const line = buffer.slice(0, eol);
        buffer = buffer.slice(eol + 2);
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === 'EHLO') socket.write('250-bench-sink\r\n250 8BITMIME\r\n');
        else if (verb === 'RCPT') {
          recipients.push((/<([^>]*)>/.exec(line) ?? [])[1] ?? '');
          socket.write('250 OK\r\n');
        } else if (verb === 'DATA') {
          inData = true;
          socket.write('354 go ahead\r\n');
          // A message body may start with "." only if the client forgot dot-stuffing; keep "\r\n" so the end mark is found.
          buffer = `\r\n${buffer}`;
        } else if (verb === 'QUIT') socket.end('221 bye\r\n');
        else socket.write('250 OK\r\n');
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: server.address().port,
    /** Resolves with the time (performance.now()) at which `count` messages for `tag` had arrived. */
    received(tag, count, timeoutMs) {
      if ((counts.get(tag) ?? 0) >= count) return Promise.resolve(performance.now());
      return new Promise((resolve, reject) => {
        const w = { tag, count, resolve };
        waiters.push(w);
        setTimeout(() => {
          if (waiters.includes(w))
            reject(new Error(`only ${counts.get(tag) ?? 0} of ${count} e-mails for ${tag} arrived`));
        }, timeoutMs).unref();
      });
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

function printTable(rows) {
  const head = ['scenario', 'ours', 'baseline', 'ratio', 'target', 'met'];
  const cells = rows.map((r) => [
    r.scenario,
    r.oursText,
    r.baselineText,
    r.ratioText,
    r.target,
    r.met === null ? 'n/a' : r.met ? 'yes' : 'NO',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => String(c[i]).length)));
  const line = (c) => `| ${c.map((v, i) => String(v).padEnd(widths[i])).join(' | ')} |`;
  console.log([line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.map(line)].join('\n'));
}

module.exports = {
  sleep,
  cpuPinning,
  startNode,
  stopNode,
  rssOf,
  cpuMicrosDuring,
  withCpuPerRequest,
  cannon,
  load,
  fixedRate,
  median,
  interleave,
  startSmtpSink,
  printTable,
};
