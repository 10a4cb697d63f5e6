import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheck } from '@nestjs/terminus';
import { Public } from '../auth/public.decorator';
import { ApiErrorResponse } from '../common/http/api-errors.decorator';
import { Readiness } from './readiness';

const NOT_READY = 'PostgreSQL or Redis does not answer: the error body (server_error) names which, with Retry-After';

@ApiTags('health')
@Controller('health')
export class HealthController {
  constructor(private readonly readiness: Readiness) {}

  /** Kept for existing probes: the same answer as /health/ready. */
  @Public()
  @Get()
  @HealthCheck({ swaggerDocumentation: false })
  @ApiOperation({ summary: 'Readiness (same as /health/ready)', security: [] })
  @ApiOkResponse({ description: 'PostgreSQL and Redis answer' })
  @ApiServiceUnavailableResponse({ type: ApiErrorResponse, description: NOT_READY })
  check() {
    return this.readiness.check();
  }

  @Public()
  @Get('ready')
  @HealthCheck({ swaggerDocumentation: false })
  @ApiOperation({ summary: 'Readiness: the metadata PostgreSQL and Redis answer', security: [] })
  @ApiOkResponse({ description: 'PostgreSQL and Redis answer' })
  @ApiServiceUnavailableResponse({ type: ApiErrorResponse, description: NOT_READY })
  ready() {
    return this.readiness.check();
  }

  /** Liveness asks nothing of the dependencies: restarting the process would not bring them back. */
  @Public()
  @Get('live')
  @ApiOperation({ summary: 'Liveness: the process is up and serving', security: [] })
  @ApiOkResponse({ description: 'The process answers' })
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }
}
