import { Global, Module } from '@nestjs/common';
import { APP_GUARD, DiscoveryModule } from '@nestjs/core';
import { PassportModule } from '@nestjs/passport';
import { DevelopersModule } from '../developers/developers.module';
import { AccessTokens } from './access-tokens';
import { JwtAuthGuard } from './jwt-auth.guard';
import { JwtStrategy } from './jwt.strategy';
import { RouteScopeCheck } from './route-scope-check';
import { SigningKeys } from './signing-keys';

@Global()
@Module({
  imports: [PassportModule, DiscoveryModule, DevelopersModule],
  providers: [
    SigningKeys,
    AccessTokens,
    JwtStrategy,
    { provide: APP_GUARD, useClass: JwtAuthGuard },
    // The global guard and the check that every route it guards declares a scope come together.
    RouteScopeCheck,
  ],
  exports: [SigningKeys, AccessTokens],
})
export class AuthModule {}
