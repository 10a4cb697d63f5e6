import { Body, Controller, Get, Post, Query, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { AuthAttemptsGuard } from '../auth/oauth/auth-attempts.guard';
import { Public } from '../auth/public.decorator';
import { ApiException } from '../common/errors/api-exception';
import { FormReadable } from '../common/http/form-readable.guard';
import { escapeHtml, htmlPage, sendPage } from '../common/http/html';
import { PageErrorsFilter } from '../common/http/page-errors.filter';
import { DevelopersService } from '../developers/developers.service';
import { JoinFormDto } from './dto/join-form.dto';
import { InvitesService } from './invites.service';

/**
 * The page behind the e-mailed join link: a person without an account chooses a password (which
 * creates a HUMAN developer), one with an account enters theirs; either way they join the workspace.
 * Both the page and the form need the link's proof of having received the e-mail, not just the code:
 * a programmatic invite gives the code to the inviter, who must neither claim the address nor learn
 * whether it has an account (nor guess its password here). Without the proof every code that can be
 * used gets the same 403 page, before any account is looked up. Its errors are pages too.
 */
@ApiExcludeController()
@Public()
@UseFilters(PageErrorsFilter)
@Controller('invites')
export class InvitePageController {
  constructor(
    private readonly invites: InvitesService,
    private readonly developers: DevelopersService,
  ) {}

  @Get('accept')
  async page(
    @Query('code') code: string | undefined,
    @Query('proof') proof: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    try {
      const invite = await this.invites.findByCode(String(code ?? ''));
      // Without the e-mailed proof the answer is the same whether or not the address has an account
      // (which is not even looked up): the holder of a bare code may be the inviter.
      if (!this.invites.hasEmailProof(String(code), typeof proof === 'string' ? proof : undefined)) {
        return sendPage(res, 403, this.openTheEmail(invite.email));
      }
      const hasAccount = !!(await this.developers.findActiveByEmail(invite.email));
      const form = this.form(req, invite.workspace!.name, invite.email, String(code), hasAccount, undefined, proof);
      sendPage(res, 200, form);
    } catch (err) {
      this.renderError(res, err);
    }
  }

  /**
   * Rate limited like the login form: only the e-mailed link (code and proof) reaches the password
   * check, but a link can be forwarded or leak, and this form must not become an unlimited password
   * oracle for the invitee's account. Attempts without the proof are counted too.
   */
  @Post('join')
  @UseGuards(FormReadable, AuthAttemptsGuard)
  async join(@Body() body: JoinFormDto, @Req() req: Request, @Res() res: Response): Promise<void> {
    let invite;
    try {
      invite = await this.invites.findByCode(body.code);
    } catch (err) {
      return this.renderError(res, err);
    }
    // As on the page: without the proof, one answer whatever the address, and no password is checked
    // (the form would otherwise be a password-guessing form for the invitee's account).
    if (!this.invites.hasEmailProof(body.code, body.proof)) {
      return sendPage(res, 403, this.openTheEmail(invite.email));
    }
    const workspaceName = invite.workspace!.name;
    const existing = await this.developers.findActiveByEmail(invite.email);
    try {
      let joined: { developer: { email: string }; workspace: { name: string } };
      if (existing) {
        const developer = await this.developers.authenticate(invite.email, body.password);
        if (!developer) {
          return sendPage(
            res,
            401,
            this.form(req, workspaceName, invite.email, body.code, true, 'Wrong password.', body.proof),
          );
        }
        joined = { developer, workspace: await this.invites.accept(developer, body.code) };
      } else {
        joined = await this.invites.acceptAsNewDeveloper(body.code, body.password);
      }
      const { developer, workspace } = joined;
      sendPage(
        res,
        200,
        htmlPage(
          `You joined ${workspace.name}`,
          `<p>Welcome! ${escapeHtml(developer.email)} is now a member of <strong>${escapeHtml(workspace.name)}</strong>.</p>`,
        ),
      );
    } catch (err) {
      if (!(err instanceof ApiException)) throw err;
      res.set(err.headers); // Retry-After of a limit, say
      sendPage(
        res,
        err.getStatus(),
        this.form(req, workspaceName, invite.email, body.code, !!existing, err.body.message, body.proof),
      );
    }
  }

  /**
   * The form posts to `join` next to the URL the page was served at (relative, so it stays under a
   * reverse proxy's path prefix; `../join` from a URL with a trailing slash), whether that is the
   * page (`…/invites/accept`) or the form served again (`…/invites/join`).
   */
  private form(
    req: Request,
    workspaceName: string,
    email: string,
    code: string,
    hasAccount: boolean,
    error?: string,
    proof?: string,
  ): string {
    const title = `Join ${workspaceName}`;
    const lead = hasAccount
      ? `Sign in as <strong>${escapeHtml(email)}</strong> to join.`
      : `Choose a password (at least 8 characters) to create your account, <strong>${escapeHtml(email)}</strong>, and join.`;
    return htmlPage(
      title,
      `<p>${lead}</p>
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}
<form method="post" action="${req.path.endsWith('/') ? '../join' : 'join'}">
<input type="hidden" name="code" value="${escapeHtml(code)}">
${proof ? `<input type="hidden" name="proof" value="${escapeHtml(proof)}">` : ''}
<label for="password">${hasAccount ? 'Password' : 'New password'}</label>
<input id="password" name="password" type="password" autocomplete="${hasAccount ? 'current-password' : 'new-password'}" required>
<button type="submit">${hasAccount ? 'Sign in and join' : 'Create account and join'}</button>
</form>`,
    );
  }

  private openTheEmail(email: string): string {
    return htmlPage(
      'Open the link from the invitation e-mail',
      `<p class="error" role="alert">To join as ${escapeHtml(email)}, open the link from the invitation e-mail sent to that address. A developer who already has an account can also accept the invite with the API (<code>POST /invites/accept</code>).</p>`,
    );
  }

  private renderError(res: Response, err: unknown): void {
    if (!(err instanceof ApiException)) throw err;
    sendPage(
      res,
      err.getStatus(),
      htmlPage('This invite cannot be used', `<p class="error" role="alert">${escapeHtml(err.body.message)}</p>`),
    );
  }
}
