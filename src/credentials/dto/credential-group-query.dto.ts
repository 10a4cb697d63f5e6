import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsString, MaxLength, MinLength, NotContains } from 'class-validator';
import { IsOptionalNotNull } from '../../common/http/validation';

/** The `credentials.tenant` column's length. */
export const MAX_TENANT_ID_LENGTH = 200;

/**
 * A query string says `true` or `false`; anything else (`1`, `yes`, an empty value, the parameter
 * twice) is left as it came, so that IsBoolean refuses it instead of reading it as either.
 */
const queryBoolean = ({ value }: { value: unknown }): unknown =>
  value === 'true' ? true : value === 'false' ? false : value;

/**
 * The query parameters `tenantId` and `internal` of createCredential, listCredentials and
 * rotateCredential: which group of the database's credentials the request is about. A credential
 * belongs to one group, its tenant (or none) and whether it is internal.
 */
export class CredentialGroupQueryDto {
  /**
   * The tenant the credential is for. Create: recorded with the credential. List: only that
   * tenant's credentials (every tenant's, and those of none, when omitted). Rotate: only the
   * credentials of that tenant are replaced (only those of no tenant when omitted).
   * @example "tenant-42"
   */
  @ApiPropertyOptional({ minLength: 1, maxLength: MAX_TENANT_ID_LENGTH })
  @IsOptionalNotNull()
  @IsString()
  @MinLength(1)
  @MaxLength(MAX_TENANT_ID_LENGTH)
  // PostgreSQL text cannot hold NUL: refuse it here rather than fail at the insert.
  @NotContains('\u0000', { message: 'tenantId must not contain NUL characters' })
  tenantId?: string;

  /**
   * Whether the credential is an internal one. Create: recorded with the credential. List: the
   * internal credentials instead of the others. Rotate: only the internal credentials (or only the
   * others) are replaced. `true` or `false`.
   */
  @ApiPropertyOptional({ type: Boolean, default: false })
  @IsOptionalNotNull()
  @Transform(queryBoolean)
  @IsBoolean({ message: 'internal must be true or false' })
  internal?: boolean;
}
