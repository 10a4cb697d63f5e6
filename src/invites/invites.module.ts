import { MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { FormBody } from '../common/http/form-body.middleware';
import { JOIN_FORM } from '../common/http/form-routes';
import { DevelopersModule } from '../developers/developers.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { InviteAcceptanceController } from './invite-acceptance.controller';
import { InvitePageController } from './invite-page.controller';
import { InvitesController } from './invites.controller';
import { InvitesRepository } from './invites.repository';
import { InvitesService } from './invites.service';
import { Mailer } from './mailer.service';

@Module({
  imports: [WorkspacesModule, DevelopersModule],
  controllers: [InvitesController, InviteAcceptanceController, InvitePageController],
  providers: [InvitesRepository, InvitesService, Mailer],
  exports: [InvitesService],
})
export class InvitesModule implements NestModule {
  /** The join page's form. */
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(FormBody).forRoutes(JOIN_FORM);
  }
}
