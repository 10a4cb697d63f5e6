import { MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { JsonBodyOfAnyType } from '../common/http/json-body-of-any-type.middleware';
import { WorkspaceAccessGuard } from './workspace-access.guard';
import { WorkspacesController } from './workspaces.controller';
import { WorkspacesRepository } from './workspaces.repository';
import { WorkspacesService } from './workspaces.service';

@Module({
  controllers: [WorkspacesController],
  providers: [WorkspacesRepository, WorkspacesService, WorkspaceAccessGuard],
  exports: [WorkspacesService, WorkspaceAccessGuard],
})
export class WorkspacesModule implements NestModule {
  /** The published API declares the create body as `*∕*`: it is JSON whatever the Content-Type. */
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(JsonBodyOfAnyType).forRoutes({ path: 'workspaces', method: RequestMethod.POST });
  }
}
