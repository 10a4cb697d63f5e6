import { Global, Module } from '@nestjs/common';
import { DataPlaneServersRepository } from './data-plane-servers.repository';
import { DataPlaneServers } from './data-plane-servers.service';
import { DataPlane } from './data-plane.service';
import { ServerAnswers } from './server-answers';

/** The regions' PostgreSQL servers (the fleet) and the SQL run on them. Global: databases, credentials and compute act on them. */
@Global()
@Module({
  providers: [DataPlaneServersRepository, DataPlane, DataPlaneServers, ServerAnswers],
  exports: [DataPlane, DataPlaneServers, ServerAnswers],
})
export class DataPlaneModule {}
