import { escapeHtml, htmlPage } from '../../common/http/html';
import type { AuthorizationParameters } from './authorization-requests.service';

/**
 * The login form of the authorization endpoint: plain HTML, no script, labelled inputs named
 * `email` and `password`, the authorization request carried in hidden fields. The form has no
 * `action`, so it posts to the URL the page was served from (HTML's form submission algorithm): that
 * works at `/authorize`, at `/authorize/` and behind a proxy's path prefix, where any relative or
 * absolute path would break one of them. The query string the GET carried goes along and is ignored:
 * the POST reads the body only.
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
  return htmlPage(
    'Sign in',
    `<p>to continue to <strong>${escapeHtml(options.clientName)}</strong></p>
${error}<form method="post">
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
  return htmlPage(
    'Cannot sign in',
    `<p role="alert">${escapeHtml(message)}</p>
<p>Return to the application and start again, or ask its operator to register it.</p>`,
  );
}
