import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DataPlaneReadinessController } from './data-plane-readiness.controller';
import { HealthController } from './health.controller';
import { Readiness } from './readiness';

@Module({
  imports: [TerminusModule.forRoot({ errorLogStyle: 'json', logger: false })],
  controllers: [HealthController, DataPlaneReadinessController],
  providers: [Readiness],
  exports: [Readiness],
})
export class HealthModule {}
