import { MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { DatabasesModule } from '../databases/databases.module';
import { SubscriptionsModule } from '../subscriptions/subscriptions.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { ComputeInstancesController } from './compute-instances.controller';
import { ComputeInstancesRepository } from './compute-instances.repository';
import { ComputeLifecycle } from './compute-lifecycle.service';
import { ComputeTypesController } from './compute-types.controller';
import { ComputeUsagePeriodsModule } from './compute-usage-periods.module';
import { ComputeService } from './compute.service';
import { JsonBodyOfAnyType } from '../common/http/json-body-of-any-type.middleware';

const INSTANCES = 'workspaces/:workspaceSlug/databases/:databaseName/compute';

@Module({
  imports: [ComputeUsagePeriodsModule, DatabasesModule, WorkspacesModule, SubscriptionsModule],
  controllers: [ComputeTypesController, ComputeInstancesController],
  providers: [ComputeInstancesRepository, ComputeService, ComputeLifecycle],
  exports: [ComputeService, ComputeLifecycle],
})
export class ComputeModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer
      .apply(JsonBodyOfAnyType)
      .forRoutes(
        { path: INSTANCES, method: RequestMethod.POST },
        { path: `${INSTANCES}/:instanceId`, method: RequestMethod.PUT },
      );
  }
}
