import { tokenError } from './token-errors';

/** What a token request says about its client: an id, and a secret when it has one. */
export interface PresentedClient {
  clientId: string;
  clientSecret?: string;
  method: 'client_secret_basic' | 'client_secret_post' | 'none';
}

/** RFC 6749 §2.3.1: id and secret are form-urlencoded before being joined by `:` and base64-encoded. */
function formDecode(value: string): string {
  return decodeURIComponent(value.replace(/\+/g, ' '));
}

/** The client id of `Authorization: Basic …`, or undefined (for rate-limit keys; never authenticates). */
export function basicClientId(header: string | undefined): string | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  try {
    return formDecode(decoded.slice(0, colon));
  } catch {
    return undefined;
  }
}

/**
 * Reads the client of a token request from `Authorization: Basic` or the `client_id` and
 * `client_secret` form fields. Using both ways at once is refused (RFC 6749 §2.3).
 */
export function presentedClient(header: string | undefined, form: Record<string, string>): PresentedClient {
  const bodyId = form.client_id || undefined;
  const bodySecret = form.client_secret || undefined;
  if (header) {
    if (!/^Basic(\s|$)/i.test(header)) {
      throw tokenError('invalid_client', 'The Authorization header must use the Basic scheme');
    }
    const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
    if (!match) throw tokenError('invalid_client', 'Malformed Basic credentials');
    const decoded = Buffer.from(match[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw tokenError('invalid_client', 'Malformed Basic credentials');
    let clientId: string;
    let clientSecret: string;
    try {
      clientId = formDecode(decoded.slice(0, colon));
      clientSecret = formDecode(decoded.slice(colon + 1));
    } catch {
      throw tokenError('invalid_client', 'Malformed Basic credentials');
    }
    if (bodySecret) throw tokenError('invalid_request', 'Authenticate the client with one method only');
    if (bodyId && bodyId !== clientId)
      throw tokenError('invalid_request', 'client_id differs from the authenticated client');
    if (!clientId) throw tokenError('invalid_client', 'Malformed Basic credentials');
    return { clientId, clientSecret: clientSecret || undefined, method: 'client_secret_basic' };
  }
  if (!bodyId) throw tokenError('invalid_client', 'Client authentication is required (Basic or client_id)');
  return bodySecret
    ? { clientId: bodyId, clientSecret: bodySecret, method: 'client_secret_post' }
    : { clientId: bodyId, method: 'none' };
}
