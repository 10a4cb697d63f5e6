import { MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DatabasesModule } from '../databases/databases.module';
import { SubscriptionsModule } from '../subscriptions/subscriptions.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { ComputeInstanceEntity } from './compute-instance.entity';
import { ComputeInstancesController } from './compute-instances.controller';
import { ComputeLifecycle } from './compute-lifecycle.service';
import { ComputeTypeEntity } from './compute-type.entity';
import { ComputeTypesController } from './compute-types.controller';
import { ComputeUsagePeriodEntity } from './compute-usage-period.entity';
import { ComputeService } from './compute.service';
import { JsonBodyOfAnyType } from './json-body-of-any-type.middleware';

const INSTANCES = 'workspaces/:workspaceSlug/databases/:databaseName/compute';

@Module({
  imports: [
    TypeOrmModule.forFeature([ComputeTypeEntity, ComputeInstanceEntity, ComputeUsagePeriodEntity]),
    DatabasesModule,
    WorkspacesModule,
    SubscriptionsModule,
  ],
  controllers: [ComputeTypesController, ComputeInstancesController],
  providers: [ComputeService, ComputeLifecycle],
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
