import { Injectable } from '@nestjs/common';
import { sign } from 'jsonwebtoken';
import { randomUUID } from 'node:crypto';
import { AppConfig } from '../config/app-config';
import { SigningKeys } from './signing-keys';

export interface AccessTokenClaims {
  sub: string;
  scope: string;
  client_id?: string;
}

export interface IssuedAccessToken {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
}

/** Mints access tokens: RS256 JWTs with iss, sub, aud, exp, iat, jti and scope. */
@Injectable()
export class AccessTokens {
  constructor(
    private readonly config: AppConfig,
    private readonly keys: SigningKeys,
  ) {}

  issue(claims: AccessTokenClaims, ttlSeconds = this.config.env.ACCESS_TOKEN_TTL_SECONDS): IssuedAccessToken {
    const { sub, ...rest } = claims;
    const token = sign(rest, this.keys.privateKey, {
      algorithm: this.keys.algorithm,
      keyid: this.keys.keyId,
      issuer: this.config.env.JWT_ISSUER,
      audience: this.config.env.JWT_AUDIENCE,
      subject: sub,
      expiresIn: ttlSeconds,
      jwtid: randomUUID(),
    });
    return { access_token: token, token_type: 'Bearer', expires_in: ttlSeconds };
  }
}
