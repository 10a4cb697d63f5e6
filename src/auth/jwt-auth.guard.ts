import { ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { AUTHENTICATION_READS, type AuthenticatingRequest, type AuthenticationRead } from './authentication-reads';
import { IS_PUBLIC } from './public.decorator';

/** Deny by default: every route needs a valid bearer token unless it is marked @Public(). */
@Injectable()
export class JwtAuthGuard extends AuthGuard('jwt') {
  constructor(private readonly reflector: Reflector) {
    super();
  }

  override canActivate(context: ExecutionContext) {
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()]);
    if (isPublic) return true;
    const reads = this.reflector.get<AuthenticationRead | undefined>(AUTHENTICATION_READS, context.getHandler());
    if (reads) context.switchToHttp().getRequest<AuthenticatingRequest>().authenticationReads = reads;
    return super.canActivate(context);
  }

  /**
   * `err` is set when loading the developer failed (the metadata database is out): that is no bad
   * token, and the exception filter answers it 503, so the client keeps its token.
   */
  override handleRequest<T>(err: unknown, user: T, info: unknown): T {
    if (err instanceof Error) throw err;
    if (err) throw new Error('authentication failed');
    if (!user) {
      const reason =
        info instanceof Error && info.name === 'TokenExpiredError'
          ? 'Access token expired'
          : 'Missing, invalid or expired bearer token';
      throw new ApiException(ErrorCode.InvalidCredentials, reason, { headers: { 'WWW-Authenticate': 'Bearer' } });
    }
    return user;
  }
}
