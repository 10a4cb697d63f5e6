import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DataPlaneReadinessController } from './data-plane-readiness.controller';
import { HealthController } from './health.controller';

@Module({
  imports: [TerminusModule.forRoot({ errorLogStyle: 'json', logger: false })],
  controllers: [HealthController, DataPlaneReadinessController],
})
export class HealthModule {}
