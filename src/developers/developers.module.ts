import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DatabasesModule } from '../databases/databases.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { DeveloperProfiles } from './developer-profiles.service';
import { DeveloperEntity } from './developer.entity';
import { DevelopersController } from './developers.controller';
import { DevelopersService } from './developers.service';
import { WorkspaceDevelopersController } from './workspace-developers.controller';

@Module({
  imports: [TypeOrmModule.forFeature([DeveloperEntity]), WorkspacesModule, DatabasesModule],
  controllers: [DevelopersController, WorkspaceDevelopersController],
  providers: [DevelopersService, DeveloperProfiles],
  exports: [DevelopersService, DeveloperProfiles],
})
export class DevelopersModule {}
