import { Module, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { hideRoute } from '../common/http/allowed-methods';
import { AppConfig } from '../config/app-config';
import { CredentialsModule } from '../credentials/credentials.module';
import { DatabasesModule } from '../databases/databases.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { InstantDatabasesController, PROVISION_PATH } from './instant-databases.controller';
import { DatabaseClaimsRepository } from './database-claims.repository';
import { InstantDatabasesService } from './instant-databases.service';

/** Instant databases without an account: `POST /databases/provision` and the claim into a workspace. */
@Module({
  imports: [DatabasesModule, CredentialsModule, WorkspacesModule],
  controllers: [InstantDatabasesController],
  providers: [DatabaseClaimsRepository, InstantDatabasesService],
})
export class InstantDatabasesModule implements OnModuleInit {
  constructor(
    private readonly config: AppConfig,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** Switched off, the provision route is hidden from every `Allow` (see InstantDatabasesOffered). */
  onModuleInit(): void {
    const app = this.adapterHost.httpAdapter?.getInstance<{ locals: Record<string, unknown> }>();
    if (!this.config.env.INSTANT_DATABASES && app) hideRoute(app, 'POST', PROVISION_PATH);
  }
}
