import { Catch } from '@nestjs/common';
import type { Response } from 'express';
import { AllExceptionsFilter } from '../errors/all-exceptions.filter';
import type { ErrorBody } from '../errors/api-exception';
import { escapeHtml, htmlPage, sendPage } from './html';

const TITLES: Record<number, string> = {
  429: 'Too many attempts',
  503: 'Try again shortly',
};

/**
 * The browser forms' (login, invite join) answer to what their handlers do not render themselves:
 * a refusal before the handler (the attempts limit per address, an unreadable form) or a dependency
 * failing. The same status, headers (Retry-After) and message as the API's JSON answer, as a page a
 * person reads instead of a JSON document in the browser.
 */
@Catch()
export class PageErrorsFilter extends AllExceptionsFilter {
  protected override send(res: Response, body: ErrorBody): void {
    const title = TITLES[body.statusCode] ?? 'This request cannot be completed';
    sendPage(res, body.statusCode, htmlPage(title, `<p class="error" role="alert">${escapeHtml(body.message)}</p>`));
  }
}
