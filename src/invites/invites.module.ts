import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DevelopersModule } from '../developers/developers.module';
import { WorkspacesModule } from '../workspaces/workspaces.module';
import { InviteAcceptanceController } from './invite-acceptance.controller';
import { InviteEntity } from './invite.entity';
import { InvitePageController } from './invite-page.controller';
import { InvitesController } from './invites.controller';
import { InvitesService } from './invites.service';
import { Mailer } from './mailer.service';

@Module({
  imports: [TypeOrmModule.forFeature([InviteEntity]), WorkspacesModule, DevelopersModule],
  controllers: [InvitesController, InviteAcceptanceController, InvitePageController],
  providers: [InvitesService, Mailer],
  exports: [InvitesService],
})
export class InvitesModule {}
