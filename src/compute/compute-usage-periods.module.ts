import { Module } from '@nestjs/common';
import { ComputeUsagePeriodsRepository } from './compute-usage-periods.repository';

/** The repository alone, for the compute lifecycle (which writes the periods) and metrics (which reads them). */
@Module({ providers: [ComputeUsagePeriodsRepository], exports: [ComputeUsagePeriodsRepository] })
export class ComputeUsagePeriodsModule {}
