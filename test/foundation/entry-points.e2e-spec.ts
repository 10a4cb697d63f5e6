import { freePort } from '../support/free-port';
import { spawn } from 'node:child_process';
import { connect, createServer, Server } from 'node:net';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');

function run(script: string, env: Record<string, string>, onOutput?: (text: string, stop: () => void) => void) {
  return new Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }>((resolve) => {
    const child = spawn(process.execPath, [join(root, 'dist/src', script)], {
      env: { ...process.env, LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const stop = () => child.kill('SIGTERM');
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
      onOutput?.(output, stop);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const guard = setTimeout(() => child.kill('SIGKILL'), 30000);
    // 'close', not 'exit': only then has everything the child wrote been read.
    child.on('close', (code, signal) => {
      clearTimeout(guard);
      resolve({ code, signal, output });
    });
  });
}

describe('entry points (built app)', () => {
  it('refuses to start in production without secrets, naming each missing variable', async () => {
    const result = await run('main.js', {
      NODE_ENV: 'production',
      JWT_PRIVATE_KEY: '',
      CREDENTIAL_ENCRYPTION_KEYS: '',
    });
    expect(result.code).toBe(1);
    expect(result.output).toContain('JWT_PRIVATE_KEY: required when NODE_ENV=production');
    expect(result.output).toContain('CREDENTIAL_ENCRYPTION_KEYS: required when NODE_ENV=production');
  });

  it('refuses to start with an invalid variable, naming it', async () => {
    const result = await run('main.js', { PORT: 'not-a-port' });
    expect(result.code).toBe(1);
    expect(result.output).toMatch(/PORT: .*integer/);
  });

  it('boots the worker alone, answers its readiness probe and shuts it down cleanly on SIGTERM', async () => {
    const port = await freePort();
    let stopped = false;
    let ready: Promise<number> | undefined;
    const result = await run(
      'worker.js',
      {
        QUEUE_PREFIX: `worker-smoke-${Date.now()}`,
        DATABASE_POOL_TARGET: '0',
        WORKER_PORT: String(port),
        // Stopped once it answers: no pass of its own on the run's shared metadata database.
        RECONCILE_FIRST_PASS_SECONDS: '3600',
      },
      (text, stop) => {
        if (!stopped && text.includes('worker started')) {
          stopped = true;
          ready = fetch(`http://127.0.0.1:${port}/health/ready`)
            .then((res) => res.status)
            .finally(stop);
        }
      },
    );
    expect(stopped).toBe(true);
    expect(await ready).toBe(200);
    // On failure, show how the worker ended and what it said last.
    const lastLines = result.output.trim().split('\n').slice(-8).join('\n');
    expect({ code: result.code, signal: result.signal, lastLines }).toEqual({
      code: 0,
      signal: null,
      lastLines: expect.any(String),
    });
  });

  it('waits for a metadata database that starts after it, then boots', async () => {
    const metadata = new URL(process.env.DATABASE_URL!);
    const port = await freePort();
    const late = new URL(metadata.toString());
    late.hostname = '127.0.0.1';
    late.port = String(port);
    let proxy: Server | undefined;
    // The database "starts" once the worker has found it missing: a TCP proxy to the real one opens on the port.
    const openDatabase = () => {
      proxy = createServer((socket) => {
        const upstream = connect(Number(metadata.port || 5432), metadata.hostname);
        socket.pipe(upstream).pipe(socket);
        socket.on('error', () => upstream.destroy());
        upstream.on('error', () => socket.destroy());
      }).listen(port, '127.0.0.1');
    };
    let started = false;
    try {
      const result = await run(
        'worker.js',
        {
          DATABASE_URL: late.toString(),
          QUEUE_PREFIX: `worker-late-db-${Date.now()}`,
          DATABASE_POOL_TARGET: '0',
          WORKER_PORT: String(await freePort()),
        },
        (text, stop) => {
          if (!proxy && text.includes('The metadata database is not reachable yet (ECONNREFUSED)')) openDatabase();
          if (!started && text.includes('worker started')) {
            started = true;
            stop();
          }
        },
      );
      expect(proxy).toBeDefined();
      expect(started).toBe(true);
      expect(result.code).toBe(0);
    } finally {
      await new Promise((resolve) => (proxy ? proxy.close(resolve) : resolve(undefined)));
    }
  });

  it('refuses to start on a port already in use with a one-line reason, not a stack trace, exit 1', async () => {
    const taken = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => taken.listen(port, resolve));
    try {
      for (const [script, variable] of [
        ['main.js', 'PORT'],
        ['worker.js', 'WORKER_PORT'],
      ]) {
        const result = await run(script, {
          QUEUE_PREFIX: `port-taken-${Date.now()}`,
          DATABASE_POOL_TARGET: '0',
          [variable]: String(port),
        });
        expect({ script, code: result.code }).toEqual({ script, code: 1 });
        expect(result.output).toContain(`Could not start: listen EADDRINUSE: address already in use :::${port}`);
        expect(result.output).not.toMatch(/^\s+at /m);
      }
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('gives up on an unreachable metadata database after DATABASE_BOOT_WAIT_SECONDS, exit 1', async () => {
    const unreachable = new URL(process.env.DATABASE_URL!);
    unreachable.hostname = '127.0.0.1';
    unreachable.port = String(await freePort());
    const began = Date.now();
    const result = await run('main.js', { DATABASE_URL: unreachable.toString(), DATABASE_BOOT_WAIT_SECONDS: '2' });
    expect(result.code).toBe(1);
    expect(Date.now() - began).toBeGreaterThanOrEqual(2000);
    expect(result.output).toContain('The metadata database is not reachable yet (ECONNREFUSED)');
    expect(result.output).toContain('Could not prepare the metadata database');
  });
});
