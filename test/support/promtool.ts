import { spawnSync } from 'node:child_process';

/** Prometheus's own checker (Debian package `prometheus`; .ci/run installs it). */
export const PROMTOOL = process.env.PROMTOOL_PATH ?? 'promtool';

export function promtoolAvailable(): boolean {
  return spawnSync(PROMTOOL, ['--version'], { stdio: 'ignore' }).status === 0;
}

/** Runs `promtool check metrics` on an exposition; returns what it reports (empty when clean). */
export function promtoolProblems(exposition: string): { status: number | null; output: string } {
  const result = spawnSync(PROMTOOL, ['check', 'metrics'], { input: exposition, encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout ?? ''}${result.stderr ?? ''}`.trim() };
}

/**
 * `it` when promtool is installed, and always in CI (which installs it: a missing promtool fails
 * there instead of passing unseen); elsewhere a skipped test whose name says why.
 */
export const itWithPromtool: jest.It =
  promtoolAvailable() || process.env.CI
    ? it
    : (((name: string) =>
        it.skip(`${name} [skipped: promtool not installed; apt-get install prometheus]`, () => undefined)) as jest.It);
