import { HttpStatus } from '@nestjs/common';

/** Every errorCode of the published API. The HTTP status of each lives in one table below. */
export enum ErrorCode {
  InternalError = 'internal_error',
  BadRequest = 'bad_request',
  UnsupportedOperation = 'unsupported_operation',
  ForbiddenOperation = 'forbidden_operation',
  EntityNotFound = 'entity_not_found',
  DuplicateEntity = 'duplicate_entity',
  InvalidCredentials = 'invalid_credentials',
  UnknownOidcProvider = 'unknown_oidc_provider',
  UnknownOidcParty = 'unknown_oidc_party',
  ProviderAlreadyExists = 'provider_already_exists',
  ProviderConfigError = 'provider_config_error',
  ProviderMismatch = 'provider_mismatch',
  ProviderUpdateError = 'provider_update_error',
  ProviderDisabled = 'provider_disabled',
  SessionStateMissing = 'session_state_missing',
  SessionStateMismatch = 'session_state_mismatch',
  OidcCodeMissing = 'oidc_code_missing',
  TenantNotFound = 'tenant_not_found',
  ConstraintViolation = 'constraint_violation',
  SqlException = 'sql_exception',
  DbCreationFailure = 'db_creation_failure',
  DbRenameFailure = 'db_rename_failure',
  DbStatusFailure = 'db_status_failure',
  DbInitializationFailure = 'db_initialization_failure',
  DbDeletionFailure = 'db_deletion_failure',
  DbConfigMissing = 'db_config_missing',
  UnauthorizedWorkspaceAccess = 'unauthorized_workspace_access',
  EmailSendFailure = 'email_send_failure',
  JdbcException = 'jdbc_exception',
  OidcException = 'oidc_exception',
  RegionMismatch = 'region_mismatch',
  CredentialCreationFailure = 'credential_creation_failure',
  CredentialPropagationFailure = 'credential_propagation_failure',
  UnauthorizedClient = 'unauthorized_client',
  UnsupportedResponseType = 'unsupported_response_type',
  InvalidRequest = 'invalid_request',
  ServerError = 'server_error',
  AccessDenied = 'access_denied',
  FeatureIneligible = 'feature_ineligible',
  CustomerLookupFailure = 'customer_lookup_failure',
  ThresholdExceeded = 'threshold_exceeded',
  CreateRejected = 'create_rejected',
}

/** The one table from error code to HTTP status. The switch is exhaustive (lint enforces it). */
export function httpStatusOf(code: ErrorCode): HttpStatus {
  switch (code) {
    case ErrorCode.BadRequest:
    case ErrorCode.InvalidRequest:
    case ErrorCode.UnsupportedResponseType:
    case ErrorCode.UnauthorizedClient:
    case ErrorCode.ConstraintViolation:
    case ErrorCode.FeatureIneligible:
    case ErrorCode.RegionMismatch:
    case ErrorCode.SessionStateMissing:
    case ErrorCode.SessionStateMismatch:
    case ErrorCode.OidcCodeMissing:
    case ErrorCode.UnknownOidcProvider:
    case ErrorCode.UnknownOidcParty:
    case ErrorCode.ProviderConfigError:
    case ErrorCode.ProviderMismatch:
    case ErrorCode.CreateRejected:
      return HttpStatus.BAD_REQUEST;
    case ErrorCode.InvalidCredentials:
      return HttpStatus.UNAUTHORIZED;
    case ErrorCode.ForbiddenOperation:
    case ErrorCode.UnauthorizedWorkspaceAccess:
    case ErrorCode.AccessDenied:
    case ErrorCode.ProviderDisabled:
      return HttpStatus.FORBIDDEN;
    case ErrorCode.EntityNotFound:
    case ErrorCode.TenantNotFound:
      return HttpStatus.NOT_FOUND;
    case ErrorCode.DuplicateEntity:
    case ErrorCode.ProviderAlreadyExists:
    case ErrorCode.DbStatusFailure:
      return HttpStatus.CONFLICT;
    case ErrorCode.UnsupportedOperation:
      return HttpStatus.METHOD_NOT_ALLOWED;
    case ErrorCode.ThresholdExceeded:
      return HttpStatus.TOO_MANY_REQUESTS;
    case ErrorCode.CustomerLookupFailure:
    case ErrorCode.EmailSendFailure:
    case ErrorCode.CredentialPropagationFailure:
      return HttpStatus.BAD_GATEWAY;
    case ErrorCode.ServerError:
      return HttpStatus.SERVICE_UNAVAILABLE;
    case ErrorCode.InternalError:
    case ErrorCode.SqlException:
    case ErrorCode.JdbcException:
    case ErrorCode.OidcException:
    case ErrorCode.DbCreationFailure:
    case ErrorCode.DbRenameFailure:
    case ErrorCode.DbInitializationFailure:
    case ErrorCode.DbDeletionFailure:
    case ErrorCode.DbConfigMissing:
    case ErrorCode.CredentialCreationFailure:
    case ErrorCode.ProviderUpdateError:
      return HttpStatus.INTERNAL_SERVER_ERROR;
  }
}
