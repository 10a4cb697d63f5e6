import { MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { JsonBodyOfAnyType } from '../common/http/json-body-of-any-type.middleware';
import { DatabasesModule } from '../databases/databases.module';
import { SubscriptionsModule } from '../subscriptions/subscriptions.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { CredentialsController } from './credentials.controller';
import { CredentialsRepository } from './credentials.repository';
import { CredentialsService } from './credentials.service';

@Module({
  imports: [DatabasesModule, WorkspacesModule, SubscriptionsModule],
  controllers: [CredentialsController],
  providers: [CredentialsRepository, CredentialsService],
  exports: [CredentialsService],
})
export class CredentialsModule implements NestModule {
  /** The published API declares the rotation body as `*∕*`: it is JSON whatever the Content-Type. */
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(JsonBodyOfAnyType).forRoutes({
      path: 'workspaces/:workspaceSlug/databases/:databaseName/credentials/rotate',
      method: RequestMethod.POST,
    });
  }
}
