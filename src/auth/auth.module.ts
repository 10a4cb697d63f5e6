import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { PassportModule } from '@nestjs/passport';
import { DevelopersModule } from '../developers/developers.module';
import { AccessTokens } from './access-tokens';
import { JwtAuthGuard } from './jwt-auth.guard';
import { JwtStrategy } from './jwt.strategy';
import { SigningKeys } from './signing-keys';

@Global()
@Module({
  imports: [PassportModule, DevelopersModule],
  providers: [SigningKeys, AccessTokens, JwtStrategy, { provide: APP_GUARD, useClass: JwtAuthGuard }],
  exports: [SigningKeys, AccessTokens],
})
export class AuthModule {}
