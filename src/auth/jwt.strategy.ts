import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { ExtractJwt, Strategy } from 'passport-jwt';
import { AppConfig } from '../config/app-config';
import { DevelopersService } from '../developers/developers.service';
import type { AuthenticatedDeveloper } from './authenticated-developer';
import { SigningKeys } from './signing-keys';

interface AccessTokenPayload {
  sub: string;
  scope?: string;
  client_id?: string;
}

/** Verifies signature, issuer, audience and expiry, then loads the (not deleted) developer. */
@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  constructor(
    config: AppConfig,
    keys: SigningKeys,
    private readonly developers: DevelopersService,
  ) {
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      // A prebuilt KeyObject: jsonwebtoken accepts it and skips re-parsing the key per request.
      secretOrKeyProvider: (_req: unknown, _raw: unknown, done: (err: unknown, key?: unknown) => void) =>
        done(null, keys.publicKey),
      algorithms: [keys.algorithm],
      issuer: config.env.JWT_ISSUER,
      audience: config.env.JWT_AUDIENCE,
      ignoreExpiration: false,
    } as never);
  }

  async validate(payload: AccessTokenPayload): Promise<AuthenticatedDeveloper | false> {
    const developer = await this.developers.findActive(payload.sub);
    if (!developer) return false;
    return {
      id: developer.id,
      email: developer.email,
      kind: developer.kind,
      scope: payload.scope ?? '',
      clientId: payload.client_id,
    };
  }
}
