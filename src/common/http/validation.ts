import { ValidationError, ValidationPipe } from '@nestjs/common';
import { ApiException } from '../errors/api-exception';
import { ErrorCode } from '../errors/error-code';

function flatten(errors: ValidationError[], parent = ''): string[] {
  return errors.flatMap((e) => {
    const path = parent ? `${parent}.${e.property}` : e.property;
    const own = Object.values(e.constraints ?? {});
    return [
      ...own.map((m) => (m.startsWith(e.property) || m.startsWith(path) ? m : `${path}: ${m}`)),
      ...flatten(e.children ?? [], path),
    ];
  });
}

/** Validation at the edge: unknown fields are refused, and the message names each bad field. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    stopAtFirstError: false,
    exceptionFactory: (errors) =>
      new ApiException(ErrorCode.BadRequest, flatten(errors).join('; ') || 'Invalid request'),
  });
}
