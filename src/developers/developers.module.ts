import { Module } from '@nestjs/common';
import { DatabasesModule } from '../databases/databases.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { DatabaseIdsCache } from './database-ids-cache';
import { DeveloperProfiles } from './developer-profiles.service';
import { DevelopersController } from './developers.controller';
import { DevelopersRepository } from './developers.repository';
import { DevelopersService } from './developers.service';
import { WorkspaceDevelopersController } from './workspace-developers.controller';

@Module({
  imports: [WorkspacesModule, DatabasesModule],
  controllers: [DevelopersController, WorkspaceDevelopersController],
  providers: [DevelopersRepository, DevelopersService, DeveloperProfiles, DatabaseIdsCache],
  exports: [DevelopersService, DeveloperProfiles, DatabaseIdsCache],
})
export class DevelopersModule {}
