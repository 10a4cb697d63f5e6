import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataPlaneServerEntity } from './data-plane-server.entity';
import { DataPlaneServers } from './data-plane-servers.service';
import { DataPlane } from './data-plane.service';

/** The regions' PostgreSQL servers (the fleet) and the SQL run on them. Global: databases, credentials and compute act on them. */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([DataPlaneServerEntity])],
  providers: [DataPlane, DataPlaneServers],
  exports: [DataPlane, DataPlaneServers],
})
export class DataPlaneModule {}
