import { freePort } from '../support/free-port';
import { ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { Socket } from 'node:net';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');

/** Sends raw HTTP/1.1 on `socket` and resolves with the first complete response head. */
function responseHead(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('\r\n\r\n')) {
        socket.off('data', onData);
        resolve(text.split('\r\n\r\n')[0]);
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
  });
}

function connect(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = new Socket();
    socket.once('error', reject);
    socket.connect(port, '127.0.0.1', () => resolve(socket));
  });
}

/**
 * SIGTERM stops the API taking requests at once: idle keep-alive connections are closed, new
 * connections are refused, a request still arriving on a busy connection is answered with
 * `Connection: close`, and the request in flight finishes.
 */
describe('graceful shutdown of the API (built app)', () => {
  let child: ChildProcess | undefined;
  afterEach(() => child?.kill('SIGKILL'));

  it('closes idle keep-alive connections and refuses new ones at once, while the request in flight finishes', async () => {
    const port = await freePort();
    child = spawn(process.execPath, [join(root, 'dist/src/main.js')], {
      env: {
        ...process.env,
        PORT: String(port),
        LOG_LEVEL: 'info',
        DATABASE_POOL_TARGET: '0',
        QUEUE_PREFIX: `shutdown-${port}`,
        // No reconcile pass of its own on the run's shared metadata database.
        RECONCILE_FIRST_PASS_SECONDS: '3600',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    const exited = once(child, 'exit');
    for (let i = 0; i < 300 && !output.includes('Nest application successfully started'); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(output).toContain('Nest application successfully started');

    // An idle keep-alive connection, as a client's agent keeps them.
    const idle = await connect(port);
    const idleAnswered = responseHead(idle);
    idle.write(`GET /health HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n`);
    expect(await idleAnswered).toMatch(/^HTTP\/1.1 200/);
    const idleClosed = once(idle, 'close');

    // A request in flight: its body is still arriving when the signal comes.
    const busy = await connect(port);
    const busyAnswered = responseHead(busy);
    busy.write(
      `POST /workspaces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{"name":`,
    );
    await new Promise((r) => setTimeout(r, 200));

    // Used again just before the signal, so on a slow machine its keep-alive timeout (5 s) cannot
    // be what closes it.
    const again = responseHead(idle);
    idle.write(`GET /health HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n`);
    expect(await again).toMatch(/^HTTP\/1.1 200/);

    const signalled = Date.now();
    child.kill('SIGTERM');
    await idleClosed;
    expect(Date.now() - signalled).toBeLessThan(1000);
    // The shutdown has begun (its first line is written as the listener closes) before probing it.
    for (let i = 0; i < 50 && !output.includes('SIGTERM received'); i++) await new Promise((r) => setTimeout(r, 20));
    expect(output).toContain('SIGTERM received');

    const probe = () =>
      new Promise<string>((resolve) => {
        const req = http.get({ host: '127.0.0.1', port, path: '/health', agent: false }, (res) =>
          resolve(`answered ${res.statusCode}`),
        );
        req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
      });
    // Node's server.close() closes the idle connections a moment before the listening socket (both
    // in one call): a probe sent in between is taken into the kernel's accept queue and reset when
    // the listener closes. Never answered either way; then refused.
    let refused = await probe();
    for (let i = 0; i < 3 && refused === 'ECONNRESET'; i++) {
      await new Promise((r) => setTimeout(r, 20));
      refused = await probe();
    }
    expect(refused).toBe('ECONNREFUSED');

    busy.write('"late"}');
    const head = await busyAnswered;
    expect(head).toMatch(/^HTTP\/1.1 401/);
    expect(head.toLowerCase()).toContain('connection: close');

    const [code] = await exited;
    expect(code).toBe(0);
    child = undefined;
  });
});
