interface PageResponse {
  status: number;
  text: string;
  headers: Record<string, string>;
}

/**
 * A browser form's refusal (login, invite join) is a page a person reads, not the API's JSON: the
 * refusal's status, the service's page headers, `message` in an alert and, for a 429 or a 503, a
 * Retry-After. `withForm`: whether the page is the form again, to try once more.
 */
export function expectRefusalPage(
  res: PageResponse,
  status: number,
  message: string,
  options: { withForm?: boolean; retryAfterAtMost?: number } = {},
): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^text\/html/);
  expect(res.headers['content-security-policy']).toContain("default-src 'none'");
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.text).toMatch(/^<!doctype html>/);
  expect(res.text).toContain('role="alert"');
  expect(res.text).toContain(message);
  if (options.withForm !== undefined) expect(res.text.includes('<form')).toBe(options.withForm);
  if (status !== 429 && status !== 503) return;
  const retryAfter = Number(res.headers['retry-after']);
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThan(0);
  if (options.retryAfterAtMost !== undefined) expect(retryAfter).toBeLessThanOrEqual(options.retryAfterAtMost);
}

const unescape = (s: string) =>
  s.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]!);

/** What a browser does with a page's form (login, invite join): the form's target (resolved against the page's URL) and its hidden fields. */
export function readForm(html: string, pageUrl: URL): { target: URL; fields: Record<string, string> } {
  const form = /<form\b([^>]*)>/.exec(html);
  if (!form) throw new Error('no form on the page');
  const action = /\saction="([^"]*)"/.exec(form[1]);
  // No action attribute, or an empty one: the form posts to the document's URL.
  const target = new URL(unescape(action?.[1] ?? ''), pageUrl);
  const fields: Record<string, string> = {};
  for (const [, name, value] of html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)) {
    fields[unescape(name)] = unescape(value);
  }
  return { target, fields };
}
