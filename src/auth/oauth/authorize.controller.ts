import { Body, Controller, Get, Post, Query, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { ApiException } from '../../common/errors/api-exception';
import { FormReadable } from '../../common/http/form-readable.guard';
import { sendPage } from '../../common/http/html';
import { PageErrorsFilter } from '../../common/http/page-errors.filter';
import { DevelopersService } from '../../developers/developers.service';
import { Public } from '../public.decorator';
import { AuthAttemptsGuard } from './auth-attempts.guard';
import { AuthorizationCodesService } from './authorization-codes.service';
import { AuthorizationRequestsService, ValidAuthorizationRequest } from './authorization-requests.service';
import { renderErrorPage, renderLoginPage } from './login-page';

/**
 * The authorization endpoint (RFC 6749 §4.1 with PKCE): a login page for people, redirecting back
 * to the client with a code. A browser page, not part of the JSON API: its errors are pages too.
 */
@ApiExcludeController()
@Public()
@UseFilters(PageErrorsFilter)
@Controller('authorize')
export class AuthorizeController {
  constructor(
    private readonly requests: AuthorizationRequestsService,
    private readonly developers: DevelopersService,
    private readonly codes: AuthorizationCodesService,
  ) {}

  @Get()
  async show(@Query() query: Record<string, unknown>, @Res() res: Response): Promise<void> {
    const check = await this.requests.check(query);
    switch (check.outcome) {
      case 'error-page':
        return sendPage(res, 400, renderErrorPage(check.message));
      case 'error-redirect':
        return redirect(res, check.location);
      case 'valid':
        return sendPage(res, 200, this.loginPage(check.request));
    }
  }

  @Post()
  @UseGuards(FormReadable, AuthAttemptsGuard)
  async submit(@Body() body: Record<string, unknown>, @Res() res: Response): Promise<void> {
    const form = body ?? {};
    const check = await this.requests.check(form);
    if (check.outcome === 'error-page') return sendPage(res, 400, renderErrorPage(check.message));
    if (check.outcome === 'error-redirect') return redirect(res, check.location);
    const { request } = check;
    const email = typeof form.email === 'string' ? form.email.trim() : '';
    const password = typeof form.password === 'string' ? form.password : '';
    if (!email || !password) {
      return sendPage(res, 400, this.loginPage(request, email, 'Enter your e-mail and your password.'));
    }
    let developer;
    try {
      developer = await this.developers.authenticate(email, password);
    } catch (err) {
      // The account's attempts spent (429), too many sign-ins being checked (503): the form again,
      // saying when to retry.
      if (!(err instanceof ApiException)) throw err;
      res.set(err.headers);
      return sendPage(res, err.getStatus(), this.loginPage(request, email, err.body.message));
    }
    if (!developer) {
      return sendPage(res, 401, this.loginPage(request, email, 'The e-mail or the password is not right.'));
    }
    const code = await this.codes.issue({
      clientId: request.client.clientId,
      developerId: developer.id,
      redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge,
      scope: request.scope,
    });
    return redirect(res, this.requests.redirectLocation(request.redirectUri, { code, state: request.state }));
  }

  private loginPage(request: ValidAuthorizationRequest, email?: string, error?: string): string {
    return renderLoginPage({ clientName: request.client.name, parameters: request.parameters, email, error });
  }
}

function redirect(res: Response, location: string): void {
  res.set('Cache-Control', 'no-store').redirect(302, location);
}
