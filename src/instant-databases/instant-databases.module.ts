import { Module } from '@nestjs/common';
import { CredentialsModule } from '../credentials/credentials.module';
import { DatabasesModule } from '../databases/databases.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { InstantDatabasesController } from './instant-databases.controller';
import { DatabaseClaimsRepository } from './database-claims.repository';
import { InstantDatabasesService } from './instant-databases.service';

/** Instant databases without an account: `POST /databases/provision` and the claim into a workspace. */
@Module({
  imports: [DatabasesModule, CredentialsModule, WorkspacesModule],
  controllers: [InstantDatabasesController],
  providers: [DatabaseClaimsRepository, InstantDatabasesService],
})
export class InstantDatabasesModule {}
