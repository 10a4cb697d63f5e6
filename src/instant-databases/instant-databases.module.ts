import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CredentialsModule } from '../credentials/credentials.module';
import { DatabasesModule } from '../databases/databases.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { DatabaseClaimEntity } from './database-claim.entity';
import { InstantDatabasesController } from './instant-databases.controller';
import { InstantDatabasesService } from './instant-databases.service';

/** Instant databases without an account: `POST /databases/provision` and the claim into a workspace. */
@Module({
  imports: [TypeOrmModule.forFeature([DatabaseClaimEntity]), DatabasesModule, CredentialsModule, WorkspacesModule],
  controllers: [InstantDatabasesController],
  providers: [InstantDatabasesService],
})
export class InstantDatabasesModule {}
