import { Injectable, Logger, OnApplicationShutdown, ServiceUnavailableException } from '@nestjs/common';
import { HealthCheckResult, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import { ReplyError } from 'ioredis';
import { Pool } from 'pg';
import { ApiException } from '../common/errors/api-exception';
import { OUTAGE_RETRY_AFTER_SECONDS } from '../common/errors/dependency-outage';
import { ErrorCode } from '../common/errors/error-code';
import { AppConfig } from '../config/app-config';
import { JobDispatcher } from '../queues/job-dispatcher';
import { Queues } from '../queues/queue-names';

const CHECK_TIMEOUT_MS = 1500;
/** A dependency that answers but takes no write: PostgreSQL read-only, Redis READONLY on a replica or OOM at `maxmemory`. */
const REFUSES_WRITES = 'refusing writes';
/**
 * Whether the metadata PostgreSQL takes no write: a standby (a failover that left DATABASE_URL on
 * it), or sessions read-only by default. It answers, and every write fails.
 */
const READ_ONLY_QUERY = "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' AS read_only";
/** The error replies of a Redis that answers but takes no write (others, NOAUTH or LOADING say, count as not answering). */
const WRITE_REFUSALS = /^(READONLY|OOM|MISCONF) /;

/**
 * Whether this process can do its work: the metadata PostgreSQL and Redis answer and take writes. Shared by the
 * API's /health and /health/ready and the worker's probe port.
 *
 * PostgreSQL is asked over a connection of the probe's own, not the metadata pool: with the pool
 * busy (a load spike), a ping queued behind the requests ran out its time and every replica was
 * reported "postgres not answering" at once, so a load balancer took them all out and a slowdown
 * became an outage. One more metadata connection per process, kept open between probes.
 *
 * Redis is asked with a write, not a PING: a read-only replica (a failover pointed at the wrong
 * node) or a full `maxmemory` answers PING and refuses every job. A short-lived key of the
 * deployment's own (`QUEUE_PREFIX`) that every process overwrites.
 */
@Injectable()
export class Readiness implements OnApplicationShutdown {
  private readonly logger = new Logger(Readiness.name);
  private readonly postgres: Pool;
  private readonly redisKey: string;

  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly jobs: JobDispatcher,
    config: AppConfig,
  ) {
    this.postgres = new Pool({
      connectionString: config.env.DATABASE_URL,
      max: 1,
      idleTimeoutMillis: 0,
      connectionTimeoutMillis: CHECK_TIMEOUT_MS,
      query_timeout: CHECK_TIMEOUT_MS,
      keepAlive: true,
    });
    // A connection that breaks while idle (the server restarted) leaves the pool; the next probe opens one.
    this.postgres.on('error', () => undefined);
    this.redisKey = `${config.env.QUEUE_PREFIX}:readiness`;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.postgres.end();
  }

  /**
   * The terminus result when everything answers; otherwise throws 503 `server_error` with the one
   * error body (the parts that are down in its message) and Retry-After. Terminus's per-part details
   * go to the log only.
   */
  async check(): Promise<HealthCheckResult> {
    try {
      return await this.health.check([
        () =>
          this.indicators
            .check('postgres')
            .attempt(async () => {
              const { rows } = await this.postgres.query<{ read_only: boolean }>(READ_ONLY_QUERY);
              if (rows[0]?.read_only) throw new Error(REFUSES_WRITES);
            })
            .withTimeout(CHECK_TIMEOUT_MS),
        () =>
          this.indicators
            .check('redis')
            .attempt(async () => {
              try {
                await this.jobs.queue(Queues.DatabaseLifecycle).client.set(this.redisKey, '1', 'PX', 60_000);
              } catch (err) {
                throw err instanceof ReplyError && WRITE_REFUSALS.test((err as Error).message)
                  ? new Error(REFUSES_WRITES)
                  : err;
              }
            })
            .withTimeout(CHECK_TIMEOUT_MS),
      ]);
    } catch (err) {
      if (!(err instanceof ServiceUnavailableException)) throw err;
      const result = (err.getResponse() ?? {}) as Partial<HealthCheckResult>;
      const down = Object.entries(result.error ?? {}).map(
        ([name, part]) => `${name} ${part?.message === REFUSES_WRITES ? REFUSES_WRITES : 'not answering'}`,
      );
      this.logger.warn({ down, details: result.details }, 'not ready');
      throw new ApiException(ErrorCode.ServerError, `Not ready: ${down.join(', ') || 'unknown'}`, {
        headers: { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) },
      });
    }
  }
}
