import { ApiPropertyOptional } from '@nestjs/swagger';

/**
 * The form of `POST /oauth2/token` (documentation only: the endpoint reads the form itself, because
 * RFC 6749 wants unknown parameters ignored and errors in its own shape).
 */
export class TokenRequestDto {
  @ApiPropertyOptional({ enum: ['authorization_code', 'refresh_token', 'client_credentials'] })
  grant_type?: string;
  /** The authorization code (authorization_code grant). */
  code?: string;
  /** The PKCE verifier whose S256 hash was sent as code_challenge. */
  code_verifier?: string;
  /** Exactly the redirect_uri of the authorization request. */
  redirect_uri?: string;
  /** The client, when it does not authenticate with `Authorization: Basic`. */
  client_id?: string;
  /** The client secret, when the client authenticates with form fields. */
  client_secret?: string;
  /** The refresh token (refresh_token grant); it is rotated by the exchange. */
  refresh_token?: string;
  /** Space-delimited scopes: workspaces, databases, query. */
  scope?: string;
}
