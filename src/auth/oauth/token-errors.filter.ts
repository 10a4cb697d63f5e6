import { Catch } from '@nestjs/common';
import type { Response } from 'express';
import { AllExceptionsFilter } from '../../common/errors/all-exceptions.filter';
import type { ErrorBody } from '../../common/errors/api-exception';

/**
 * Every error of the token endpoint, whoever raised it (the handler's tokenError, the attempts limit,
 * an unreadable form, a dependency failing): never cached (RFC 6749 §5.1, §5.2), and a 4xx that is not
 * yet an RFC 6749 error becomes `invalid_request` (its status, errorCode and message kept), so an OAuth
 * client reads every refusal of a request it sent. A 429 and a 5xx keep the service's body: RFC 6749
 * defines no error for them.
 */
@Catch()
export class TokenErrorsFilter extends AllExceptionsFilter {
  protected override send(res: Response, body: ErrorBody): void {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Pragma', 'no-cache');
    const status = body.statusCode;
    const refusal = status >= 400 && status < 500 && status !== 429 && body.error === undefined;
    super.send(res, refusal ? { ...body, error: 'invalid_request', error_description: body.message } : body);
  }
}
