import { MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import { SecretHasherModule } from '../../common/crypto/secret-hasher';
import { FormBody } from '../../common/http/form-body.middleware';
import { LOGIN_FORM, TOKEN_FORM } from '../../common/http/form-routes';
import { AppConfig } from '../../config/app-config';
import { DevelopersModule } from '../../developers/developers.module';
import { AuthAttemptsGuard, TokenAttemptsGuard } from './auth-attempts.guard';
import { AuthorizationCodesRepository } from './authorization-codes.repository';
import { AuthorizationCodesService } from './authorization-codes.service';
import { AuthorizationRequestsService } from './authorization-requests.service';
import { AuthorizeController } from './authorize.controller';
import { OAuthClientsRepository } from './oauth-clients.repository';
import { OAuthClientsService } from './oauth-clients.service';
import { RefreshTokensRepository } from './refresh-tokens.repository';
import { RefreshTokensService } from './refresh-tokens.service';
import { RedisThrottlerStorage, RedisThrottlerStorageModule } from '../../common/rate-limit/redis-throttler-storage';
import { TokenEndpointService } from './token-endpoint.service';
import { TokenController } from './token.controller';
import { WellKnownController } from './well-known.controller';

/** The OAuth 2.0 authorization server: login page, token endpoint, clients, discovery. */
@Module({
  imports: [
    DevelopersModule,
    SecretHasherModule,
    ThrottlerModule.forRootAsync({
      imports: [RedisThrottlerStorageModule],
      inject: [AppConfig, RedisThrottlerStorage],
      useFactory: (config: AppConfig, storage: RedisThrottlerStorage) => ({
        throttlers: [{ ttl: 60_000, limit: config.env.RATE_LIMIT_AUTH_PER_MINUTE }],
        // Shared by every API process (see RedisThrottlerStorage).
        storage,
      }),
    }),
  ],
  controllers: [AuthorizeController, TokenController, WellKnownController],
  providers: [
    OAuthClientsRepository,
    AuthorizationCodesRepository,
    RefreshTokensRepository,
    OAuthClientsService,
    AuthorizationCodesService,
    AuthorizationRequestsService,
    RefreshTokensService,
    TokenEndpointService,
    AuthAttemptsGuard,
    TokenAttemptsGuard,
  ],
  exports: [OAuthClientsService],
})
export class OAuthModule implements NestModule {
  /** The token endpoint and the login page take forms. */
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(FormBody).forRoutes(TOKEN_FORM, LOGIN_FORM);
  }
}
