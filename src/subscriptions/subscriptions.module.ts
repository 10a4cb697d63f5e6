import { MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { JsonBodyOfAnyType } from '../common/http/json-body-of-any-type.middleware';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { PlanLimits } from './plan-limits.service';
import { SubscriptionsController } from './subscriptions.controller';
import { SubscriptionsRepository } from './subscriptions.repository';
import { SubscriptionsService } from './subscriptions.service';

const SUBSCRIPTION = 'workspaces/:workspaceSlug/subscription';

@Module({
  imports: [WorkspacesModule],
  controllers: [SubscriptionsController],
  providers: [SubscriptionsRepository, SubscriptionsService, PlanLimits],
  exports: [SubscriptionsService, PlanLimits],
})
export class SubscriptionsModule implements NestModule {
  /** The published API declares the write bodies as `*∕*`: they are JSON whatever the Content-Type. */
  configure(consumer: MiddlewareConsumer): void {
    consumer
      .apply(JsonBodyOfAnyType)
      .forRoutes({ path: SUBSCRIPTION, method: RequestMethod.POST }, { path: SUBSCRIPTION, method: RequestMethod.PUT });
  }
}
