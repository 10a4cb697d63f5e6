import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from './free-port';

const root = join(__dirname, '..', '..');

/**
 * Runs the built API (`dist/src/main.js`, as deployed; workers off, no warm pool) with `env` added
 * to this process's environment, calls `use` with its base URL once it answers `/health/live`,
 * then stops it. Resolves to `use`'s result and everything the process wrote (standard output and
 * error: its logs, as in production).
 */
export async function withBuiltApi<T>(
  env: Record<string, string>,
  use: (base: string) => Promise<T>,
): Promise<{ result: T; output: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(root, 'dist/src/main.js')], {
    env: { ...process.env, PORT: String(port), WORKERS: 'off', DATABASE_POOL_TARGET: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const guard = setTimeout(() => child.kill('SIGKILL'), 30000);
  try {
    const base = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      const up = await fetch(`${base}/health/live`).then(
        () => true,
        () => false,
      );
      if (up) break;
      if (i > 200) throw new Error(`the API did not start:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const result = await use(base);
    child.kill('SIGTERM');
    await exited;
    return { result, output };
  } finally {
    child.kill('SIGTERM');
    await exited;
    clearTimeout(guard);
  }
}
