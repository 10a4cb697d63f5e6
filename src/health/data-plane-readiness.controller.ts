import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { Public } from '../auth/public.decorator';
import { ApiErrorResponse } from '../common/http/api-errors.decorator';
import { DataPlaneServerState } from '../data-plane/data-plane-server.entity';
import { DataPlaneServers } from '../data-plane/data-plane-servers.service';
import { DataPlane } from '../data-plane/data-plane.service';

class DataPlaneServerReadiness {
  @ApiProperty({ format: 'uuid' })
  id!: string;

  @ApiProperty()
  region!: string;

  @ApiProperty({ enum: DataPlaneServerState })
  state!: DataPlaneServerState;

  @ApiProperty({ description: 'Whether the server answered a trivial query within the data-plane timeouts' })
  up!: boolean;
}

class DataPlaneReadiness {
  @ApiProperty({ type: [DataPlaneServerReadiness] })
  servers!: DataPlaneServerReadiness[];
}

/** How long one round of pings is reused (the route is public; it must not fan out per request). */
const CACHE_MS = 2000;

/**
 * Readiness detail of the data plane: each server up or down. Always 200: one server down is not
 * the service down (`/health` is about the control plane itself). Public like `/health`; it names
 * no host, URL or database.
 */
@ApiTags('health')
@Controller('health')
export class DataPlaneReadinessController {
  private last?: { at: number; result: Promise<DataPlaneReadiness> };

  constructor(
    private readonly servers: DataPlaneServers,
    private readonly dataPlane: DataPlane,
  ) {}

  @Public()
  @Get('data-plane')
  @ApiOperation({
    summary: 'Readiness detail of the data plane: each server up or down',
    security: [],
    description:
      'Always 200 while the metadata database answers, whatever the servers: one server down is not the service down. Names no host, URL or database.',
  })
  @ApiOkResponse({ type: DataPlaneReadiness, description: 'Each data-plane server, up or down' })
  @ApiServiceUnavailableResponse({ type: ApiErrorResponse, description: 'The metadata database does not answer' })
  check(): Promise<DataPlaneReadiness> {
    if (!this.last || Date.now() - this.last.at > CACHE_MS) {
      const result = this.probe();
      this.last = { at: Date.now(), result };
      result.catch(() => (this.last = undefined));
    }
    return this.last.result;
  }

  private async probe(): Promise<DataPlaneReadiness> {
    const servers = await this.servers.directory(true);
    return {
      servers: await Promise.all(
        servers.map(async (s) => ({ id: s.id, region: s.region, state: s.state, up: await this.dataPlane.ping(s.id) })),
      ),
    };
  }
}
