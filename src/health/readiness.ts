import { Injectable, Logger, ServiceUnavailableException } from '@nestjs/common';
import {
  HealthCheckResult,
  HealthCheckService,
  HealthIndicatorService,
  TypeOrmHealthIndicator,
} from '@nestjs/terminus';
import { ApiException } from '../common/errors/api-exception';
import { OUTAGE_RETRY_AFTER_SECONDS } from '../common/errors/dependency-outage';
import { ErrorCode } from '../common/errors/error-code';
import { JobDispatcher } from '../queues/job-dispatcher';
import { Queues } from '../queues/queue-names';

const CHECK_TIMEOUT_MS = 1500;

/**
 * Whether this process can do its work: the metadata PostgreSQL and Redis answer. Shared by the
 * API's /health and /health/ready and the worker's probe port.
 */
@Injectable()
export class Readiness {
  private readonly logger = new Logger(Readiness.name);

  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    private readonly jobs: JobDispatcher,
  ) {}

  /**
   * The terminus result when everything answers; otherwise throws 503 `server_error` with the one
   * error body (the parts that are down in its message) and Retry-After. Terminus's per-part details
   * go to the log only.
   */
  async check(): Promise<HealthCheckResult> {
    try {
      return await this.health.check([
        () => this.db.pingCheck('postgres').withTimeout(CHECK_TIMEOUT_MS),
        () =>
          this.indicators
            .check('redis')
            .attempt(async () => {
              await this.jobs.queue(Queues.DatabaseLifecycle).client.ping();
            })
            .withTimeout(CHECK_TIMEOUT_MS),
      ]);
    } catch (err) {
      if (!(err instanceof ServiceUnavailableException)) throw err;
      const result = (err.getResponse() ?? {}) as Partial<HealthCheckResult>;
      const down = Object.keys(result.error ?? {});
      this.logger.warn({ down, details: result.details }, 'not ready');
      throw new ApiException(ErrorCode.ServerError, `Not ready: ${down.join(', ') || 'unknown'} not answering`, {
        headers: { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) },
      });
    }
  }
}
