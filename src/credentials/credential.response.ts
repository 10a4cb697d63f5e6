import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { DatabaseResponse, DatabaseSummaryResponse } from '../databases/database.response';

/** `Credential` of the published API (list items): never a password or anything derived from it. */
export class CredentialResponse {
  /** The credential's id, which is also the PostgreSQL user name to log in with. */
  @ApiProperty({ minLength: 1 })
  id!: string;
  database!: DatabaseSummaryResponse;
  /** The tenant the credential was created for (`tenantId`); absent when none was given. */
  tenant?: string;
  /** Whether the credential was created as an internal one (`internal=true`). */
  internal!: boolean;
  created!: Date;
  /** When a rotation scheduled this credential to stop working and be deleted. */
  @ApiPropertyOptional()
  expires?: Date;
}

/** `CreateCredentialResponse`: the only time the password is shown. */
export class CreateCredentialResponse {
  /** The credential's id, which is also the PostgreSQL user name to log in with. */
  @ApiProperty({ minLength: 1 })
  id!: string;
  database!: DatabaseResponse;
  /** The tenant the credential was created for (`tenantId`); absent when none was given. */
  tenant?: string;
  /** Whether the credential was created as an internal one (`internal=true`). */
  internal!: boolean;
  /** The password, in plaintext, this one time only; it is stored only encrypted. */
  @ApiProperty({ minLength: 1 })
  password!: string;
  created!: Date;
}
