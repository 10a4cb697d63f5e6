import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { LRUCache } from 'lru-cache';
import { ExtractJwt, Strategy } from 'passport-jwt';
import { AppConfig } from '../config/app-config';
import { isValidDatabaseName } from '../databases/database-name';
import { DevelopersService } from '../developers/developers.service';
import { isPossibleSlug, type WorkspaceRequest } from '../workspaces/workspace-request';
import type { AuthenticatedDeveloper } from './authenticated-developer';
import type { AuthenticatingRequest } from './authentication-reads';
import { ALL_SCOPES, grantedScopes, type ScopeSet } from './oauth/scopes';
import { insufficientScope } from './required-scope';
import { SigningKeys } from './signing-keys';

export interface AccessTokenPayload {
  sub: string;
  exp?: number;
  scope?: string;
  client_id?: string;
}

/** A token that passed verification: its claims, and the scopes its `scope` claim grants (read once). */
export interface VerifiedToken {
  claims: AccessTokenPayload;
  scopes: ScopeSet;
}

/** How many verified tokens are remembered, and for how long at most (their expiry comes first). */
const VERIFIED_TOKENS = 10_000;
const VERIFIED_FOR_MS = 5 * 60_000;

/** The bearer token the request presents (`Authorization: Bearer <token>`), or null. */
export const bearerToken = ExtractJwt.fromAuthHeaderAsBearerToken();

/**
 * Verifies signature, issuer, audience and expiry, then loads the (not deleted) developer.
 *
 * Verifying an RS256 signature is the costliest step of authenticating a request, and a client
 * sends the same token many times: a token that passed is remembered until it expires (at most five
 * minutes), so its next requests skip the verification (JwtAuthGuard asks `remembered` before it
 * hands a request to passport). Only the verification is remembered: the
 * developer is loaded on every request, so a removed developer loses access at once. The token's
 * scopes are remembered with it, read into a ScopeSet, so the route's scope costs one AND. Access tokens
 * are not revocable (they are short-lived; refresh tokens are what revocation ends), and the signing
 * key only changes with a restart, which forgets everything remembered.
 */
@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  private readonly verified = new LRUCache<string, VerifiedToken>({ max: VERIFIED_TOKENS });

  constructor(
    config: AppConfig,
    keys: SigningKeys,
    private readonly developers: DevelopersService,
  ) {
    super({
      jwtFromRequest: bearerToken,
      // A prebuilt KeyObject: jsonwebtoken accepts it and skips re-parsing the key per request.
      secretOrKeyProvider: (_req: unknown, _raw: unknown, done: (err: unknown, key?: unknown) => void) =>
        done(null, keys.publicKey),
      algorithms: [keys.algorithm],
      issuer: config.env.JWT_ISSUER,
      audience: config.env.JWT_AUDIENCE,
      ignoreExpiration: false,
      passReqToCallback: true,
    } as never);
  }

  /** The request's bearer token if passport-jwt verified it before and it has not expired. */
  remembered(req: Request): VerifiedToken | undefined {
    const token = bearerToken(req);
    return token ? this.verified.get(token) : undefined;
  }

  /** Called by passport-jwt once a token has passed verification. */
  async validate(req: Request, payload: AccessTokenPayload): Promise<AuthenticatedDeveloper | false> {
    const token = bearerToken(req);
    const verified: VerifiedToken = { claims: payload, scopes: grantedScopes(payload.scope) };
    const ttl = Math.min((payload.exp ?? 0) * 1000 - Date.now(), VERIFIED_FOR_MS);
    if (token && ttl > 0) this.verified.set(token, verified, { ttl });
    return this.load(req, verified);
  }

  /**
   * The token's developer, if not deleted, once the token is known to carry the scopes the route
   * needs (JwtAuthGuard puts them on the request): a token without them is refused before anything
   * is read. On a workspace-scoped route the same statement reads the
   * caller's membership of that workspace, which the workspace guard then uses instead of asking
   * again; and what the route asks for with AuthenticationReads (its `:databaseName` database, or the
   * caller's workspaces and database ids).
   */
  async load(req: Request, token: VerifiedToken): Promise<AuthenticatedDeveloper | false> {
    const { authenticationReads: reads, requiredScopes = ALL_SCOPES } = req as AuthenticatingRequest;
    if ((token.scopes & requiredScopes) !== requiredScopes) throw insufficientScope(requiredScopes, token.scopes);
    const payload = token.claims;
    const slug: unknown = req.params?.workspaceSlug;
    const databaseName: unknown = req.params?.databaseName;
    let developer;
    if (typeof slug === 'string' && isPossibleSlug(slug)) {
      const name =
        reads === 'routeDatabase' && typeof databaseName === 'string' && isValidDatabaseName(databaseName)
          ? databaseName
          : undefined;
      const found = await this.developers.findActiveWithWorkspace(payload.sub, slug, name);
      developer = found.developer;
      (req as WorkspaceRequest).membership = {
        slug,
        workspace: found.workspace,
        ...(name !== undefined && found.database !== undefined ? { database: { name, row: found.database } } : {}),
      };
    } else if (reads === 'ownProfile') {
      const found = await this.developers.findActiveWithWorkspaces(payload.sub);
      developer = found?.developer;
      if (found) (req as AuthenticatingRequest).ownWorkspaces = found.workspaces;
    } else {
      developer = await this.developers.findActive(payload.sub);
    }
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
