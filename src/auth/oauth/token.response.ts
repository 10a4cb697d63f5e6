/** A successful token response (RFC 6749 §5.1). */
export class TokenResponseBody {
  /** A JWT (RS256) carrying iss, sub (the developer id), aud, exp, iat, jti, scope and client_id. */
  access_token!: string;
  /** Always `Bearer`. */
  token_type!: string;
  /** Lifetime of the access token, in seconds. */
  expires_in!: number;
  /** Opaque; single use (rotated on every refresh). Not issued for client_credentials. */
  refresh_token?: string;
  /** Space-delimited granted scopes. */
  scope?: string;
}

/** An error of the token endpoint: the RFC 6749 fields beside the service's own. */
export class TokenErrorBody {
  /** RFC 6749 §5.2 error code. */
  error!: string;
  error_description!: string;
  errorCode!: string;
  message!: string;
  statusCode!: number;
}
