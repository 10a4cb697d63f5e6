import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { ClientRecord, OAuthClientsService } from './oauth-clients.service';
import { isWellFormedS256Challenge } from './pkce';
import { parseScope } from './scopes';

/** The parameters of `GET /authorize`, carried through the login form as hidden fields. */
export const AUTHORIZATION_PARAMETERS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'state',
  'scope',
  'code_challenge',
  'code_challenge_method',
] as const;
export type AuthorizationParameters = Partial<Record<(typeof AUTHORIZATION_PARAMETERS)[number], string>>;

export interface ValidAuthorizationRequest {
  client: ClientRecord;
  redirectUri: string;
  state?: string;
  scope: string;
  codeChallenge: string | null;
  /** The parameters as received, to carry through the login form. */
  parameters: AuthorizationParameters;
}

export type AuthorizationRequestCheck =
  | { outcome: 'valid'; request: ValidAuthorizationRequest }
  /** Client or redirect URI cannot be trusted: show an error page, never redirect (no open redirect). */
  | { outcome: 'error-page'; message: string }
  /** The redirect URI is trusted: the error goes back to the client (RFC 6749 §4.1.2.1). */
  | { outcome: 'error-redirect'; location: string };

/** Validates authorization requests (RFC 6749 §4.1.1 with PKCE, RFC 7636) in the order that keeps redirects safe. */
@Injectable()
export class AuthorizationRequestsService {
  constructor(
    private readonly clients: OAuthClientsService,
    private readonly config: AppConfig,
  ) {}

  /** Picks the authorization parameters out of a query or form; repeated parameters are refused. */
  parametersOf(source: Record<string, unknown>): AuthorizationParameters | { repeated: string } {
    const parameters: AuthorizationParameters = {};
    for (const name of AUTHORIZATION_PARAMETERS) {
      const value = source[name];
      if (Array.isArray(value)) return { repeated: name };
      if (typeof value === 'string' && value !== '') parameters[name] = value;
    }
    return parameters;
  }

  async check(source: Record<string, unknown>): Promise<AuthorizationRequestCheck> {
    const parameters = this.parametersOf(source);
    if ('repeated' in parameters)
      return { outcome: 'error-page', message: `${parameters.repeated} is given more than once.` };
    const { client_id: clientId, redirect_uri: redirectUri } = parameters;
    if (!clientId) return { outcome: 'error-page', message: 'The request does not name a client (client_id).' };
    const client = await this.clients.find(clientId);
    if (!client) return { outcome: 'error-page', message: 'The application that sent you here is not registered.' };
    if (!redirectUri) return { outcome: 'error-page', message: 'The request has no redirect_uri.' };
    if (!this.clients.allowsRedirect(client, redirectUri)) {
      return { outcome: 'error-page', message: 'The redirect_uri is not registered for this application.' };
    }

    const state = parameters.state;
    const fail = (error: string, description: string): AuthorizationRequestCheck => ({
      outcome: 'error-redirect',
      location: this.redirectLocation(redirectUri, { error, error_description: description, state }),
    });
    if (!parameters.response_type) return fail('invalid_request', 'response_type is required');
    if (parameters.response_type !== 'code') {
      return fail('unsupported_response_type', 'Only response_type=code is supported');
    }
    const challenge = parameters.code_challenge;
    const method = parameters.code_challenge_method;
    if (method && method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256');
    if (challenge) {
      if (!method) return fail('invalid_request', 'code_challenge_method must be S256 (plain is not supported)');
      if (!isWellFormedS256Challenge(challenge)) {
        return fail('invalid_request', 'code_challenge must be a base64url SHA-256 (43 characters)');
      }
    } else if (client.isPublic) {
      return fail('invalid_request', 'PKCE is required: send code_challenge and code_challenge_method=S256');
    } else if (method) {
      return fail('invalid_request', 'code_challenge_method given without code_challenge');
    }
    const scope = parseScope(parameters.scope);
    if (!scope.ok) return fail('invalid_scope', `Unknown scope: ${scope.unknown.join(' ')}`);

    return {
      outcome: 'valid',
      request: { client, redirectUri, state, scope: scope.scope, codeChallenge: challenge ?? null, parameters },
    };
  }

  /** The client's redirect URI with the response parameters (and `iss`, RFC 9207) added to its query. */
  redirectLocation(redirectUri: string, params: Record<string, string | undefined>): string {
    const url = new URL(redirectUri);
    for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
    url.searchParams.set('iss', this.config.env.JWT_ISSUER);
    return url.toString();
  }
}
