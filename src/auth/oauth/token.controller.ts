import { Body, Controller, Headers, HttpCode, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConsumes,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiTooManyRequestsResponse,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../public.decorator';
import { TokenAttemptsGuard } from './auth-attempts.guard';
import { TokenRequestDto } from './dto/token-request.dto';
import { TokenEndpointService } from './token-endpoint.service';
import { tokenError } from './token-errors';
import { TokenErrorBody, TokenResponseBody } from './token.response';
import { ApiErrorResponse } from '../../common/http/api-errors.decorator';
import { FormReadable } from '../../common/http/form-readable.guard';
import { TokenErrorsFilter } from './token-errors.filter';

@ApiTags('oauth2')
@Public()
@UseFilters(TokenErrorsFilter)
@Controller('oauth2')
export class TokenController {
  constructor(private readonly tokens: TokenEndpointService) {}

  @Post('token')
  @HttpCode(200)
  @UseGuards(FormReadable, TokenAttemptsGuard)
  @ApiOperation({
    operationId: 'getToken',
    summary: 'Exchange an authorization code, a refresh token or client credentials for tokens',
    security: [],
  })
  @ApiHeader({ name: 'Authorization', required: false, description: 'Basic client credentials (RFC 6749 §2.3.1)' })
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({ type: TokenRequestDto })
  @ApiOkResponse({ type: TokenResponseBody, description: 'Tokens (Cache-Control: no-store)' })
  @ApiBadRequestResponse({
    type: TokenErrorBody,
    description: 'invalid_request, invalid_grant, unauthorized_client, unsupported_grant_type or invalid_scope',
  })
  @ApiUnauthorizedResponse({ type: TokenErrorBody, description: 'invalid_client' })
  @ApiTooManyRequestsResponse({
    type: ApiErrorResponse,
    description: 'Too many attempts from this address for this client (threshold_exceeded, with Retry-After)',
  })
  async getToken(
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
    @Headers('authorization') authorization: string | undefined,
    @Body() body: Record<string, unknown>,
  ): Promise<TokenResponseBody> {
    if (!req.is('application/x-www-form-urlencoded')) {
      throw tokenError('invalid_request', 'The body must be application/x-www-form-urlencoded');
    }
    const form: Record<string, string> = {};
    for (const [name, value] of Object.entries(body ?? {})) {
      // RFC 6749 §3.2: a parameter sent without a value is treated as omitted (an empty `scope=` is
      // no scope asked, not an unknown one), and only what is left counts towards "more than once".
      const values = (Array.isArray(value) ? value : [value]).filter(
        (v): v is string => typeof v === 'string' && v !== '',
      );
      if (values.length > 1) throw tokenError('invalid_request', `${name} is given more than once`);
      if (values.length === 1) form[name] = values[0];
    }
    const response = await this.tokens.exchange(authorization, form);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Pragma', 'no-cache');
    return response;
  }
}
