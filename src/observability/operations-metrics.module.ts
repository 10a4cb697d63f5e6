import { Global, Module } from '@nestjs/common';
import { DevelopersModule } from '../developers/developers.module';
import { InsightsModule } from '../insights/insights.module';
import { OperationsMetrics } from './operations-metrics';

/** Prometheus metrics of the process (served by configureApp at /metrics and by the worker's probe port). */
@Global()
@Module({ imports: [DevelopersModule, InsightsModule], providers: [OperationsMetrics], exports: [OperationsMetrics] })
export class OperationsMetricsModule {}
