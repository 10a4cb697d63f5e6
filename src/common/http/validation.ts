import { ArgumentMetadata, HttpException, ValidationError, ValidationPipe } from '@nestjs/common';
import { ValidateIf, ValidationOptions } from 'class-validator';
import { ApiException } from '../errors/api-exception';
import { ErrorCode } from '../errors/error-code';
import { jsonShapeProblem } from './json-shape';
import { RefusedBody } from './unread-body';

/**
 * A field the request may leave out; when it is there, its rules apply, to JSON null as to any
 * other value. class-validator's `@IsOptional()` skips the rules for null as well, and no field of
 * this API gives null a meaning: `{"instanceSize": null}` then reached the service as if a size had
 * been given (a 500), `{"instanceName": null}` the database (a NOT NULL violation). With this
 * decorator null is refused by the field's own rules ("instanceSize must be a string"). Use it for
 * every optional field of a request DTO (lint refuses `IsOptional` in src outside the configuration).
 */
export function IsOptionalNotNull(options?: ValidationOptions): PropertyDecorator {
  return ValidateIf((_object, value) => value !== undefined, options);
}

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

/**
 * A validator that throws instead of reporting (validator.js's isEmail calls encodeURI, which throws
 * on a lone UTF-16 surrogate) has met a value it cannot read: that is the caller's bad request.
 */
class EdgeValidationPipe extends ValidationPipe {
  /**
   * A body no parser read (MarkUnreadBody: 415) or one the JSON parser could not
   * (refusingAtTheRoute) is refused. Bodies and queries are measured before anything recursive
   * reads them: too deep a nesting or a prototype key is the caller's bad request, whatever the
   * route's parameter type.
   */
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (value instanceof RefusedBody && metadata.type === 'body') throw value.refusal();
    if (metadata.type === 'body' || metadata.type === 'query') {
      const problem = jsonShapeProblem(value);
      if (problem) throw new ApiException(ErrorCode.BadRequest, problem);
    }
    return super.transform(value, metadata);
  }

  protected override async validate(...args: Parameters<ValidationPipe['validate']>): Promise<ValidationError[]> {
    try {
      return await super.validate(...args);
    } catch (err) {
      if (err instanceof HttpException) throw err;
      throw new ApiException(ErrorCode.BadRequest, 'A value in the request is not valid');
    }
  }
}

/** Validation at the edge: unknown fields are refused, and the message names each bad field. */
export function createValidationPipe(): ValidationPipe {
  return new EdgeValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    stopAtFirstError: false,
    exceptionFactory: (errors) =>
      new ApiException(ErrorCode.BadRequest, flatten(errors).join('; ') || 'Invalid request'),
  });
}
