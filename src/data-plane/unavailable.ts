import { HttpStatus } from '@nestjs/common';
import { ApiException } from '../common/errors/api-exception';
import { isDependencyOutage, OUTAGE_RETRY_AFTER_SECONDS } from '../common/errors/dependency-outage';
import type { ErrorCode } from '../common/errors/error-code';
import { DataPlaneError } from './data-plane.service';

/**
 * An outage of one data-plane server is not bad input (habit 17): 503 with the error body, naming
 * the region whose server did not answer (or was too busy to do it: see
 * DataPlaneError.serverUnanswered), and Retry-After. So is the metadata database failing
 * before the data plane was reached (looking up the server). Null when `err` is neither (the caller
 * answers as it would for any other failure). `outcome`: what stands after the server did not answer
 * or was too busy, when it is not that nothing was changed.
 */
export function dataPlaneUnavailable(
  code: ErrorCode,
  err: unknown,
  what: string,
  outcome?: string,
): ApiException | null {
  let message: string;
  if (err instanceof DataPlaneError) {
    if (!err.unavailable) return null;
    message = err.serverUnanswered
      ? `${what}: a data-plane server of region ${err.region} is not answering; ${outcome ?? 'nothing was changed, retry later'}`
      : `${what}: the data-plane server of region ${err.region} is busy (the database's sessions, or its locks, or this service's connections to it); ${outcome ?? 'retry later'}`;
  } else if (isDependencyOutage(err)) {
    message = `${what}: a service it needs is unavailable; retry later`;
  } else {
    return null;
  }
  return new ApiException(code, message, {
    status: HttpStatus.SERVICE_UNAVAILABLE,
    headers: { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) },
  });
}
