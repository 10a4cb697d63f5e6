import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { ApiOkResponse, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { Public } from '../auth/public.decorator';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { JobDispatcher } from '../queues/job-dispatcher';
import { Queues } from '../queues/queue-names';

@ApiTags('health')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    private readonly jobs: JobDispatcher,
  ) {}

  /** 200 when PostgreSQL and Redis answer; 503 naming the part that does not. */
  @Public()
  @Get()
  @HealthCheck({ swaggerDocumentation: false })
  @ApiOkResponse({ description: 'PostgreSQL and Redis answer' })
  @ApiServiceUnavailableResponse({ description: 'A dependency is down; the body names it' })
  async check() {
    try {
      return await this.health.check([
        () => this.db.pingCheck('postgres').withTimeout(1500),
        () =>
          this.indicators
            .check('redis')
            .attempt(async () => {
              await this.jobs.queue(Queues.DatabaseLifecycle).client.ping();
            })
            .withTimeout(1500),
      ]);
    } catch (err) {
      if (!(err instanceof ServiceUnavailableException)) throw err;
      const details =
        (err.getResponse() as { error?: Record<string, unknown>; details?: Record<string, unknown> }) ?? {};
      const down = Object.keys(details.error ?? {});
      throw new ApiException(ErrorCode.ServerError, `Unhealthy: ${down.join(', ') || 'unknown'} not answering`, {
        extra: { status: 'error', down, details: details.details },
      });
    }
  }
}
