import { Injectable } from '@nestjs/common';
import { ApiException } from '../../common/errors/api-exception';
import { MetadataTransactions } from '../../database/metadata-transactions';
import { DeveloperKind } from '../../developers/developer.entity';
import { DevelopersService } from '../../developers/developers.service';
import { AccessTokens } from '../access-tokens';
import { AuthorizationCodesService, RedeemedCode } from './authorization-codes.service';
import { PresentedClient, presentedClient } from './client-credentials';
import { ClientRecord, OAuthClientsService } from './oauth-clients.service';
import { isWellFormedVerifier } from './pkce';
import { RefreshTokensService } from './refresh-tokens.service';
import { parseScope } from './scopes';
import { tokenError } from './token-errors';

/** The successful token response (RFC 6749 §5.1). */
export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token?: string;
  scope?: string;
}

export const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials'] as const;

type CodeExchange =
  | { redeemed: Exclude<RedeemedCode, { status: 'redeemed' }> }
  | { redeemed: Extract<RedeemedCode, { status: 'redeemed' }>; refreshToken: string }
  | { error: ApiException };

/** Why a redeemed code buys no tokens for this request (RFC 6749 §4.1.3, RFC 7636 §4.6), or null. */
function codeGrantProblem(
  redeemed: Extract<RedeemedCode, { status: 'redeemed' }>,
  redirectUri: string,
  verifier: string | undefined,
): ApiException | null {
  const { grant } = redeemed;
  if (redeemed.expired) return tokenError('invalid_grant', 'The authorization code has expired');
  if (grant.redirectUri !== redirectUri) {
    return tokenError('invalid_grant', 'redirect_uri differs from the one of the authorization request');
  }
  // A code with a challenge is redeemed only with its verifier (AuthorizationCodesService.redeem).
  if (!grant.codeChallenge && verifier) {
    return tokenError('invalid_grant', 'code_verifier given, but the authorization request had no code_challenge');
  }
  return null;
}

/** `POST /oauth2/token`: client authentication, then one of the three grants. */
@Injectable()
export class TokenEndpointService {
  constructor(
    private readonly clients: OAuthClientsService,
    private readonly codes: AuthorizationCodesService,
    private readonly refreshTokens: RefreshTokensService,
    private readonly developers: DevelopersService,
    private readonly accessTokens: AccessTokens,
    private readonly txHost: MetadataTransactions,
  ) {}

  async exchange(authorization: string | undefined, form: Record<string, string>): Promise<TokenResponse> {
    const grantType = form.grant_type;
    if (!grantType) throw tokenError('invalid_request', 'grant_type is required');
    const client = await this.authenticateClient(presentedClient(authorization, form));
    switch (grantType) {
      case 'authorization_code':
        return this.authorizationCode(client, form);
      case 'refresh_token':
        return this.refreshToken(client, form);
      case 'client_credentials':
        return this.clientCredentials(client, form);
      default:
        throw tokenError(
          'unsupported_grant_type',
          `grant_type ${grantType} is not supported; use ${GRANT_TYPES.join(', ')}`,
        );
    }
  }

  private async authenticateClient(presented: PresentedClient): Promise<ClientRecord> {
    const client = await this.clients.find(presented.clientId);
    if (!client) throw tokenError('invalid_client', 'Unknown client or wrong client credentials');
    if (client.isPublic) {
      if (presented.clientSecret) throw tokenError('invalid_client', 'A public client has no secret');
      return client;
    }
    if (!presented.clientSecret) throw tokenError('invalid_client', 'This client must authenticate with its secret');
    if (!(await this.clients.verifySecret(client, presented.clientSecret))) {
      throw tokenError('invalid_client', 'Unknown client or wrong client credentials');
    }
    return client;
  }

  private async authorizationCode(client: ClientRecord, form: Record<string, string>): Promise<TokenResponse> {
    const { code, redirect_uri: redirectUri, code_verifier: verifier } = form;
    if (!code) throw tokenError('invalid_request', 'code is required');
    if (!redirectUri) throw tokenError('invalid_request', 'redirect_uri is required');
    if (verifier !== undefined && !isWellFormedVerifier(verifier)) {
      throw tokenError('invalid_request', 'code_verifier must be 32 to 128 characters of A-Z a-z 0-9 - . _ ~');
    }
    // Consuming the code and issuing its refresh token is one transaction: a replay racing this
    // redemption waits for the code's row lock, then revokes a family that already holds the token.
    // A failed check still commits the consumption (the code is spent either way), so checks
    // return their error instead of throwing inside the transaction.
    const outcome = await this.txHost.withTransaction(async (): Promise<CodeExchange> => {
      const redeemed = await this.codes.redeem(code, client.clientId, verifier);
      if (redeemed.status !== 'redeemed') return { redeemed };
      const { grant } = redeemed;
      const problem = codeGrantProblem(redeemed, redirectUri, verifier);
      if (problem) return { error: problem };
      if (!(await this.developers.findActive(grant.developerId))) {
        return { error: tokenError('invalid_grant', 'The developer no longer exists') };
      }
      const refreshToken = await this.refreshTokens.issue({
        familyId: redeemed.familyId,
        clientId: client.clientId,
        developerId: grant.developerId,
        scope: grant.scope,
      });
      return { redeemed, refreshToken };
    });
    if ('error' in outcome) throw outcome.error;
    if ('refreshToken' in outcome) {
      const { grant } = outcome.redeemed;
      return this.respond(grant.developerId, client.clientId, grant.scope, outcome.refreshToken);
    }
    const { redeemed } = outcome;
    if (redeemed.status === 'reused') {
      await this.refreshTokens.revokeFamily(redeemed.familyId);
      throw tokenError('invalid_grant', 'The authorization code was already used; the tokens it granted are revoked');
    }
    if (redeemed.status === 'foreign') {
      throw tokenError('invalid_grant', 'The authorization code was issued to another client');
    }
    if (redeemed.status === 'unverified') {
      throw tokenError(
        'invalid_grant',
        redeemed.missing ? 'code_verifier is required (PKCE)' : 'code_verifier does not match the code_challenge',
      );
    }
    throw tokenError('invalid_grant', 'Unknown authorization code');
  }

  private async refreshToken(client: ClientRecord, form: Record<string, string>): Promise<TokenResponse> {
    if (!form.refresh_token) throw tokenError('invalid_request', 'refresh_token is required');
    let narrowed: string | undefined;
    // No scope named (left out, empty, only spaces): the grant's scope (RFC 6749 §6), not parseScope's
    // "every scope", which would be a widening.
    if (form.scope !== undefined && form.scope.trim() !== '') {
      const parsed = parseScope(form.scope);
      if (!parsed.ok) throw tokenError('invalid_scope', `Unknown scope: ${parsed.unknown.join(' ')}`);
      narrowed = parsed.scope;
    }
    const rotated = await this.refreshTokens.rotate(form.refresh_token, client.clientId, narrowed, (grant) =>
      this.activeDeveloper(grant.developerId),
    );
    if (rotated.status === 'wider_scope') {
      throw tokenError('invalid_scope', 'A refresh cannot add scopes that were not granted');
    }
    if (rotated.status === 'rejected') throw tokenError('invalid_grant', rotated.reason);
    const { grant } = rotated;
    return this.respond(grant.developerId, client.clientId, narrowed ?? grant.scope, rotated.refreshToken);
  }

  private async clientCredentials(client: ClientRecord, form: Record<string, string>): Promise<TokenResponse> {
    if (client.isPublic || !client.developerId) {
      throw tokenError('unauthorized_client', 'Only an API developer’s client may use client_credentials');
    }
    const parsed = parseScope(form.scope);
    if (!parsed.ok) throw tokenError('invalid_scope', `Unknown scope: ${parsed.unknown.join(' ')}`);
    const developer = await this.developers.findActive(client.developerId);
    if (!developer || developer.kind !== DeveloperKind.Api) {
      throw tokenError('unauthorized_client', 'The developer of this client is not an active API developer');
    }
    return this.respond(developer.id, client.clientId, parsed.scope);
  }

  private async activeDeveloper(id: string): Promise<void> {
    if (!(await this.developers.findActive(id))) throw tokenError('invalid_grant', 'The developer no longer exists');
  }

  private respond(developerId: string, clientId: string, scope: string, refreshToken?: string): TokenResponse {
    const issued = this.accessTokens.issue({ sub: developerId, scope, client_id: clientId });
    return {
      ...issued,
      ...(refreshToken ? { refresh_token: refreshToken } : {}),
      ...(scope ? { scope } : {}),
    };
  }
}
