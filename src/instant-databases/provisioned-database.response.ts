import { ApiProperty } from '@nestjs/swagger';
import { DatabaseStatus } from '../databases/database.entity';

/** The instant database itself: it belongs to no workspace until it is claimed. */
export class InstantDatabaseResponse {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty()
  name!: string;

  @ApiProperty({ enum: DatabaseStatus })
  status!: DatabaseStatus;

  @ApiProperty()
  region!: string;

  @ApiProperty({ description: 'Connection URI without user or password' })
  dbHost!: string;

  @ApiProperty()
  created!: Date;
}

/** The answer of `POST /databases/provision`: shown once, the password and the claim code included. */
export class ProvisionedDatabaseResponse {
  @ApiProperty({ type: InstantDatabaseResponse })
  database!: InstantDatabaseResponse;

  @ApiProperty({ description: 'User name of the credential (a PostgreSQL role)' })
  user!: string;

  @ApiProperty({ description: 'Password of the credential, returned this one time only' })
  password!: string;

  @ApiProperty({ description: 'postgres://user:password@host:port/database' })
  connectionString!: string;

  @ApiProperty({
    description: 'Moves the database into a workspace (POST /workspaces/{slug}/databases/claim); shown once',
  })
  claimCode!: string;

  @ApiProperty({ description: 'When the code expires; an unclaimed database is dropped then' })
  claimExpiresAt!: Date;
}
