/**
 * Redirect URI rules. Registered URIs are compared exactly, except loopback ones (RFC 8252 §7.3):
 * a native client such as the Nile CLI listens on whatever port is free, so
 * `http://localhost:<any port>/callback` matches a registered `http://localhost/callback`.
 */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Parses an absolute http(s) URI without fragment or user info; null when it is not one. */
export function parseRedirectUri(raw: string): URL | null {
  if (raw.includes('#')) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.username || url.password) return null;
  return url;
}

export function isLoopbackRedirect(url: URL): boolean {
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}

/** Whether `presented` may be used as the redirect of a client that registered `registered`. */
export function redirectUriMatches(registered: string, presented: string): boolean {
  const wanted = parseRedirectUri(registered);
  const given = parseRedirectUri(presented);
  if (!wanted || !given) return false;
  if (registered === presented) return true;
  if (!isLoopbackRedirect(wanted) || !isLoopbackRedirect(given)) return false;
  return wanted.hostname === given.hostname && wanted.pathname === given.pathname && wanted.search === given.search;
}

/**
 * Checks a URI an operator registers: https, or plain http only on a loopback address
 * (tokens must not travel in clear over a network). Returns the problem, or null.
 */
export function redirectUriProblem(raw: string): string | null {
  const url = parseRedirectUri(raw);
  if (!url) return `${raw} is not an absolute http(s) URI without fragment or user info`;
  if (url.protocol === 'http:' && !isLoopbackRedirect(url)) {
    return `${raw} must use https (plain http is allowed only for localhost, 127.0.0.1 and [::1])`;
  }
  return null;
}
