import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DatabasesModule } from '../databases/databases.module';
import { SubscriptionsModule } from '../subscriptions/subscriptions.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { CredentialRotationEntity } from './credential-rotation.entity';
import { CredentialEntity } from './credential.entity';
import { CredentialsController } from './credentials.controller';
import { CredentialsRepository } from './credentials.repository';
import { CredentialsService } from './credentials.service';

@Module({
  imports: [
    TypeOrmModule.forFeature([CredentialEntity, CredentialRotationEntity]),
    DatabasesModule,
    WorkspacesModule,
    SubscriptionsModule,
  ],
  controllers: [CredentialsController],
  providers: [CredentialsRepository, CredentialsService],
  exports: [CredentialsService],
})
export class CredentialsModule {}
