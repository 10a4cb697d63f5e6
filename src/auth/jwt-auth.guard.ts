import { ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { AUTHENTICATION_READS, type AuthenticatingRequest, type AuthenticationRead } from './authentication-reads';
import { bearerToken, JwtStrategy } from './jwt.strategy';
import type { ScopeSet } from './oauth/scopes';
import { IS_PUBLIC } from './public.decorator';
import { REQUIRED_SCOPE } from './required-scope';

/**
 * Deny by default: every route needs a valid bearer token unless it is marked @Public(), and the
 * token must carry the route's scope (@RequiredScope; JwtStrategy checks it before reading anything,
 * a cheap test of the scopes remembered with the token). A route that declares no scope would need
 * every scope, but none is left without one: RouteScopeCheck refuses to start the app.
 *
 * A token is verified by passport and passport-jwt the first time it is presented; after that (see
 * JwtStrategy) the guard loads its developer itself instead of going through passport's middleware
 * again. That middleware assigns five fresh function literals to an object on every request
 * (`strategy.success = function …`), and V8 allocates a function literal assigned to a property
 * straight into the old generation: each such closure, garbage as soon as the request ends, made
 * the next scavenge promote the request's objects it reaches (README, Performance: with the
 * in-flight Set of shutdown.ts, 1.27 MB promoted per scavenge at the bench's read rate, 0.19 MB
 * after both changes).
 */
@Injectable()
export class JwtAuthGuard extends AuthGuard('jwt') {
  constructor(
    private readonly reflector: Reflector,
    private readonly strategy: JwtStrategy,
  ) {
    super();
  }

  override canActivate(context: ExecutionContext) {
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()]);
    if (isPublic) return true;
    const req = context.switchToHttp().getRequest<AuthenticatingRequest>();
    const reads = this.reflector.get<AuthenticationRead | undefined>(AUTHENTICATION_READS, context.getHandler());
    if (reads) req.authenticationReads = reads;
    const scopes = this.reflector.getAllAndOverride<ScopeSet | undefined>(REQUIRED_SCOPE, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (scopes !== undefined) req.requiredScopes = scopes;
    const token = this.strategy.remembered(req);
    if (!token) return super.canActivate(context);
    return this.strategy.load(req, token).then(
      (developer) => {
        req.user = this.handleRequest(null, developer, undefined);
        return true;
      },
      (err: unknown) => this.handleRequest(err, false, undefined),
    );
  }

  /**
   * `err` is set when the token lacks the route's scope (a 403 ApiException, passed on as it is) or
   * when loading the developer failed (the metadata database is out): that is no bad token, and the
   * exception filter answers it 503, so the client keeps its token. A refused token is challenged
   * as RFC 6750 §3.1 says: `error="invalid_token"` when one was presented, the scheme alone when
   * none was (`context` is absent only on the remembered path, where one was).
   */
  override handleRequest<T>(err: unknown, user: T, info: unknown, context?: ExecutionContext): T {
    if (err instanceof Error) throw err;
    if (err) throw new Error('authentication failed');
    if (!user) {
      const reason =
        info instanceof Error && info.name === 'TokenExpiredError'
          ? 'Access token expired'
          : 'Missing, invalid or expired bearer token';
      const presented = !context || !!bearerToken(context.switchToHttp().getRequest());
      const challenge = presented ? `Bearer error="invalid_token", error_description="${reason}"` : 'Bearer';
      throw new ApiException(ErrorCode.InvalidCredentials, reason, { headers: { 'WWW-Authenticate': challenge } });
    }
    return user;
  }
}
