import { createHash } from 'node:crypto';
import type { Response } from 'express';

/** Escapes text for HTML element content and double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const STYLE = `
  body { font-family: system-ui, sans-serif; margin: 0; background: #f5f5f7; color: #1d1d1f; }
  main { max-width: 22rem; margin: 4rem auto; padding: 2rem; background: #fff; border-radius: 0.5rem; }
  h1 { font-size: 1.5rem; margin: 0 0 0.5rem; }
  label { display: block; margin-top: 1rem; font-weight: 600; }
  input[type=email], input[type=password] { box-sizing: border-box; width: 100%; padding: 0.5rem; margin-top: 0.25rem; font-size: 1rem; }
  button { margin-top: 1.5rem; width: 100%; padding: 0.6rem; font-size: 1rem; }
  .error { color: #b00020; border-left: 0.25rem solid #b00020; padding-left: 0.5rem; }
`;

/**
 * The Content-Security-Policy of the service's HTML pages (login, invite join): nothing but their
 * stylesheet (by hash) and the form. `form-action` also governs the redirect that follows the
 * submission, hence http: and https:.
 */
export function pageCsp(secure: boolean): string {
  const styleHash = createHash('sha256').update(STYLE).digest('base64');
  return [
    "default-src 'none'",
    `style-src 'sha256-${styleHash}'`,
    "form-action 'self' http: https:",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    ...(secure ? ['upgrade-insecure-requests'] : []),
  ].join('; ');
}

/** A plain, accessible, script-free HTML page; `body` is trusted markup (escape what goes into it). */
export function htmlPage(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>${escapeHtml(title)}</h1>
${body}
</main>
</body>
</html>
`;
}

/** Sends one of the service's pages with its headers: never cached, never framed, CSP as above. */
export function sendPage(res: Response, status: number, html: string): void {
  res
    .status(status)
    .set({
      'Content-Type': 'text/html; charset=utf-8',
      'Cache-Control': 'no-store',
      'Content-Security-Policy': pageCsp(res.req.secure),
      'X-Frame-Options': 'DENY',
    })
    .send(html);
}
