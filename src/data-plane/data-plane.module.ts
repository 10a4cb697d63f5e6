import { Global, Module } from '@nestjs/common';
import { DataPlane } from './data-plane.service';

/** The regions' PostgreSQL servers. Global: databases and credentials both act on them. */
@Global()
@Module({ providers: [DataPlane], exports: [DataPlane] })
export class DataPlaneModule {}
