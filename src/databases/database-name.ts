import { registerDecorator, ValidationArguments, ValidationOptions } from 'class-validator';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { isUuid } from '../common/http/uuid';

/** Database names: fewer than 64 characters; letters, digits and underscores; not starting with a digit. */
export const DATABASE_NAME_MAX_LENGTH = 63;

/** The first rule a database name breaks, as a sentence naming it; null when the name is valid. */
export function databaseNameProblem(value: unknown): string | null {
  if (typeof value !== 'string') return 'must be a string';
  if (value.length === 0) return 'must not be empty';
  if (value.length > DATABASE_NAME_MAX_LENGTH) return 'must be fewer than 64 characters';
  if (!/^[A-Za-z_]/.test(value)) return 'must begin with a letter or an underscore';
  if (!/^[A-Za-z0-9_]+$/.test(value)) return 'may contain only letters, digits and underscores';
  return null;
}

export function isValidDatabaseName(value: unknown): value is string {
  return databaseNameProblem(value) === null;
}

/** Validates a property against the database name rules; the message names the rule broken. */
export function IsDatabaseName(options?: ValidationOptions): PropertyDecorator {
  return (target: object, propertyName: string | symbol) =>
    registerDecorator({
      name: 'isDatabaseName',
      target: target.constructor,
      propertyName: propertyName as string,
      options,
      validator: {
        validate: (value: unknown) => isValidDatabaseName(value),
        defaultMessage: (args: ValidationArguments) => `${args.property} ${databaseNameProblem(args.value)}`,
      },
    });
}

/** How the API document describes the `{databaseName}` path parameter (see DatabasesService.findOperable). */
export const DATABASE_NAME_PARAM = {
  name: 'databaseName',
  type: String,
  description:
    "The database's name, or its id: the way to reach a database queued for deletion once a new database has its name",
};

/** 404 for a `{databaseName}` path parameter that names no database the caller may act on (a name, or an id). */
export function databaseNotFound(workspace: { slug: string }, nameOrId: string): ApiException {
  const which = isUuid(nameOrId) ? `with id ${nameOrId}` : `named ${nameOrId}`;
  return new ApiException(ErrorCode.EntityNotFound, `No database ${which} in workspace ${workspace.slug}`);
}
