import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AppConfig } from '../../config/app-config';
import { Public } from '../public.decorator';
import { SigningKeys } from '../signing-keys';
import { SUPPORTED_SCOPES } from './scopes';
import { GRANT_TYPES } from './token-endpoint.service';

/** Discovery: server metadata (RFC 8414) and the keys that verify access tokens (RFC 7517). */
@ApiTags('oauth2')
@Public()
@Controller('.well-known')
export class WellKnownController {
  constructor(
    private readonly config: AppConfig,
    private readonly keys: SigningKeys,
  ) {}

  @Get('oauth-authorization-server')
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOperation({ summary: 'OAuth 2.0 authorization server metadata (RFC 8414)', security: [] })
  @ApiOkResponse({ description: 'The metadata document' })
  getAuthorizationServerMetadata(): Record<string, unknown> {
    const base = this.config.publicUrl;
    return {
      issuer: this.config.env.JWT_ISSUER,
      authorization_endpoint: `${base}/authorize`,
      token_endpoint: `${base}/oauth2/token`,
      jwks_uri: `${base}/.well-known/jwks.json`,
      scopes_supported: SUPPORTED_SCOPES,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: GRANT_TYPES,
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
      service_documentation: `${base}/docs`,
    };
  }

  @Get('jwks.json')
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOperation({ summary: 'The public keys that verify access tokens (JWK Set)', security: [] })
  @ApiOkResponse({ description: 'A JWK Set' })
  getJwks(): ReturnType<SigningKeys['jwks']> {
    return this.keys.jwks();
  }
}
