import { Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { MetadataTransactionsModule } from './database/metadata-transactions';
import { AuthModule } from './auth/auth.module';
import { OAuthModule } from './auth/oauth/oauth.module';
import { BillingModule } from './billing/billing.module';
import { AllExceptionsFilter } from './common/errors/all-exceptions.filter';
import { MarkUnreadBody } from './common/http/unread-body';
import { createValidationPipe } from './common/http/validation';
import { CommonModule } from './common/common.module';
import { ComputeModule } from './compute/compute.module';
import { AppConfig } from './config/app-config';
import { ConfigModule } from './config/config.module';
import { CredentialsModule } from './credentials/credentials.module';
import { DataPlaneModule } from './data-plane/data-plane.module';
import { dataSourceOptions } from './database/data-source-options';
import { DatabasesModule } from './databases/databases.module';
import { DevelopersModule } from './developers/developers.module';
import { HealthModule } from './health/health.module';
import { InstantDatabasesModule } from './instant-databases/instant-databases.module';
import { InsightsModule } from './insights/insights.module';
import { InvitesModule } from './invites/invites.module';
import { LoggingModule } from './logging/logging.module';
import { MetricsModule } from './metrics/metrics.module';
import { OperationsMetricsModule } from './observability/operations-metrics.module';
import { QueuesModule } from './queues/queues.module';
import { SubscriptionsModule } from './subscriptions/subscriptions.module';
import { WorkspacesModule } from './workspaces/workspaces.module';

/**
 * Wires the feature modules, without queue processors. What a process boots is composed from it:
 * ApiModule (main.ts), WorkerModule (worker.ts), and the operator CLI, which uses it alone.
 */
@Module({
  imports: [
    ConfigModule,
    LoggingModule,
    TypeOrmModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) =>
        dataSourceOptions(config.env.DATABASE_URL, config.env.DATABASE_POOL_SIZE, {
          lockMs: config.env.DATABASE_LOCK_TIMEOUT_MS,
          idleInTransactionMs: config.env.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
        }),
    }),
    // Transactions are carried by the async context (habit 15): see MetadataTransactions.
    MetadataTransactionsModule,
    QueuesModule,
    CommonModule,
    AuthModule,
    OAuthModule,
    HealthModule,
    OperationsMetricsModule,
    DevelopersModule,
    WorkspacesModule,
    DataPlaneModule,
    DatabasesModule,
    CredentialsModule,
    ComputeModule,
    InvitesModule,
    SubscriptionsModule,
    BillingModule,
    MetricsModule,
    InstantDatabasesModule,
    InsightsModule,
  ],
  providers: [
    { provide: APP_FILTER, useClass: AllExceptionsFilter },
    { provide: APP_PIPE, useFactory: createValidationPipe },
    { provide: APP_GUARD, useClass: MarkUnreadBody },
  ],
})
export class AppModule {}
