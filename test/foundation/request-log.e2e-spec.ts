import { withBuiltApi } from '../support/built-api';

/**
 * Runs the built API (its logs go to standard output, as in production), sends `requests` once it
 * listens, stops it and returns every JSON log line it wrote.
 */
async function apiLogsAround(requests: (base: string) => Promise<void>): Promise<Record<string, unknown>[]> {
  const { output } = await withBuiltApi({ LOG_LEVEL: 'info' }, requests);
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('request log (built API)', () => {
  it('writes one line per request with method, route template, status, duration and request id; no headers, no secrets', async () => {
    const lines = await apiLogsAround(async (base) => {
      await fetch(`${base}/workspaces/some-team/databases?limit=5`, {
        headers: { Authorization: 'Bearer not-a-real-token-5ecret', 'X-Request-Id': 'trace-log-1' },
      });
      await fetch(`${base}/health/live`, { headers: { 'X-Request-Id': 'trace-log-2' } });
    });
    const first = lines.filter((l) => (l.req as { id?: string } | undefined)?.id === 'trace-log-1');
    const completed = first.filter((l) => l.msg === 'request completed');
    expect(completed).toHaveLength(1);
    expect(completed[0]).toMatchObject({
      req: { id: 'trace-log-1', method: 'GET', path: '/workspaces/some-team/databases' },
      route: '/workspaces/:workspaceSlug/databases',
      res: { statusCode: 401 },
      durationMs: expect.any(Number),
    });
    // Neither the response's nor the request's headers, and never the token.
    expect(completed[0].res).toEqual({ statusCode: 401 });
    expect(completed[0].req).toEqual({ id: 'trace-log-1', method: 'GET', path: '/workspaces/some-team/databases' });
    expect(JSON.stringify(lines)).not.toContain('5ecret');

    const second = lines.filter((l) => (l.req as { id?: string } | undefined)?.id === 'trace-log-2');
    expect(second).toEqual([
      expect.objectContaining({ msg: 'request completed', route: '/health/live', res: { statusCode: 200 } }),
    ]);
  });
});
