import { HttpStatus } from '@nestjs/common';
import { ApiException } from '../common/errors/api-exception';
import { OUTAGE_RETRY_AFTER_SECONDS } from '../common/errors/dependency-outage';
import type { ErrorCode } from '../common/errors/error-code';
import { DataPlaneError } from './data-plane.service';

/**
 * An outage of one data-plane server is not bad input (habit 17): 503 with the error body, naming
 * the region whose server did not answer, and Retry-After. Null when `err` is not an unavailability
 * (the caller answers as it would for any other failure).
 */
export function dataPlaneUnavailable(code: ErrorCode, err: unknown, what: string): ApiException | null {
  if (!(err instanceof DataPlaneError) || !err.unavailable) return null;
  return new ApiException(
    code,
    `${what}: a data-plane server of region ${err.region} is not answering; nothing was changed, retry later`,
    { status: HttpStatus.SERVICE_UNAVAILABLE, headers: { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) } },
  );
}
