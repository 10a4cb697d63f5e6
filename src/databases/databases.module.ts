import { Module } from '@nestjs/common';
import { SubscriptionsModule } from '../subscriptions/subscriptions.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { DatabaseByIdController } from './database-by-id.controller';
import { DatabaseFinalizers } from './database-finalizers';
import { DatabaseLifecycle } from './database-lifecycle.service';
import { DatabasesController } from './databases.controller';
import { DatabasesRepository } from './databases.repository';
import { DatabasesService } from './databases.service';
import { Placement } from './placement.service';
import { PooledDatabasesRepository } from './pooled-databases.repository';
import { WarmPool } from './warm-pool.service';

@Module({
  imports: [WorkspacesModule, SubscriptionsModule],
  controllers: [DatabasesController, DatabaseByIdController],
  providers: [
    DatabasesRepository,
    PooledDatabasesRepository,
    DatabasesService,
    DatabaseLifecycle,
    DatabaseFinalizers,
    WarmPool,
    Placement,
  ],
  exports: [DatabasesService, DatabaseLifecycle, DatabaseFinalizers, WarmPool, Placement],
})
export class DatabasesModule {}
