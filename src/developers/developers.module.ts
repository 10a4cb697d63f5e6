import { Module } from '@nestjs/common';
import { SecretHasherModule } from '../common/crypto/secret-hasher';
import { RedisThrottlerStorageModule } from '../common/rate-limit/redis-throttler-storage';
import { DatabasesModule } from '../databases/databases.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { AccountLoginAttempts } from './account-login-attempts';
import { DatabaseIdsCache } from './database-ids-cache';
import { DeveloperProfiles } from './developer-profiles.service';
import { DevelopersController } from './developers.controller';
import { DevelopersRepository } from './developers.repository';
import { DevelopersService } from './developers.service';
import { WorkspaceDevelopersController } from './workspace-developers.controller';

@Module({
  imports: [WorkspacesModule, DatabasesModule, SecretHasherModule, RedisThrottlerStorageModule],
  controllers: [DevelopersController, WorkspaceDevelopersController],
  providers: [DevelopersRepository, DevelopersService, DeveloperProfiles, DatabaseIdsCache, AccountLoginAttempts],
  exports: [DevelopersService, DeveloperProfiles, DatabaseIdsCache],
})
export class DevelopersModule {}
