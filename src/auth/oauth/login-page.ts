import { createHash } from 'node:crypto';
import type { AuthorizationParameters } from './authorization-requests.service';

/** HTML-escapes text for element content and double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
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
 * The Content-Security-Policy of these pages: nothing but this stylesheet (by hash) and the form.
 * `form-action` also governs the redirect that follows the submission, hence http: and https:.
 */
export function loginPageCsp(secure: boolean): string {
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

function layout(title: string, body: string): string {
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
${body}
</main>
</body>
</html>
`;
}

/**
 * The login form of the authorization endpoint: plain HTML, no script, labelled inputs named
 * `email` and `password`, the authorization request carried in hidden fields.
 */
export function renderLoginPage(options: {
  clientName: string;
  parameters: AuthorizationParameters;
  email?: string;
  error?: string;
}): string {
  const hidden = Object.entries(options.parameters)
    .filter((entry): entry is [string, string] => typeof entry[1] === 'string')
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join('\n');
  const error = options.error
    ? `<p class="error" id="login-error" role="alert">${escapeHtml(options.error)}</p>\n`
    : '';
  const described = options.error ? ' aria-describedby="login-error" aria-invalid="true"' : '';
  return layout(
    'Sign in',
    `<h1>Sign in</h1>
<p>to continue to <strong>${escapeHtml(options.clientName)}</strong></p>
${error}<form method="post" action="authorize">
${hidden}
<label for="email">E-mail</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${escapeHtml(options.email ?? '')}"${described}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${described}>
<button type="submit">Sign in</button>
</form>`,
  );
}

/** The page shown instead of redirecting when the client or its redirect URI cannot be trusted. */
export function renderErrorPage(message: string): string {
  return layout(
    'Cannot sign in',
    `<h1>Cannot sign in</h1>
<p role="alert">${escapeHtml(message)}</p>
<p>Return to the application and start again, or ask its operator to register it.</p>`,
  );
}
