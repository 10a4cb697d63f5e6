import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { Region } from '../config/regions';
import { DataPlaneServers, type DataPlaneServerView } from '../data-plane/data-plane-servers.service';
import { DataPlane } from '../data-plane/data-plane.service';
import { placementTurnKey } from '../data-plane/placement-turn';
import { DatabasesRepository, type ServerUsage } from './databases.repository';

export interface Candidate {
  server: DataPlaneServerView;
  usage: ServerUsage;
  free: number;
  /** Whether this process counts the server as answering (see ServerAnswers). */
  answering: boolean;
}

/**
 * Where databases live. A new database goes to the ACTIVE server of its region with the most free
 * capacity (`max_databases` minus its databases and warm-pool entries), ties to the one with fewer
 * databases, among the servers that answer (as far as this process knows, see ServerAnswers); a
 * server that recently did not answer is chosen only when none that answers can take it. Placements of one region take turns (a transaction-level advisory lock in the
 * metadata database, held for the create's short transaction only), and so do the warm pool's new
 * entries, so two creates, or a create and a refill, never both take a server's last free place.
 */
@Injectable()
export class Placement implements OnModuleInit {
  private readonly logger = new Logger(Placement.name);

  constructor(
    private readonly databases: DatabasesRepository,
    private readonly servers: DataPlaneServers,
    private readonly dataPlane: DataPlane,
  ) {}

  /**
   * An install from before the fleet: once its regions' servers are registered from the
   * environment, every database not finalized and every warm-pool entry without a server is
   * attached to the first server of its region (the one server it has always lived on; a finalized
   * database needs none, see DatabasesRepository.attachUnplaced). And a server removed once nothing
   * lives on it lets go of its finalized databases (tombstones, kept for billing), which would
   * otherwise hold its row.
   */
  async onModuleInit(): Promise<void> {
    this.servers.onRemove('databases', async (serverId) => {
      const detached = await this.databases.detachFinalized(serverId);
      if (detached) this.logger.log({ serverId, detached }, 'finalized databases let go of their removed server');
    });
    await this.servers.registerFromEnvironment();
    await this.attachUnplaced();
  }

  async attachUnplaced(): Promise<void> {
    const databases = await this.databases.attachUnplaced('databases');
    const pooled = await this.databases.attachUnplaced('pooled_databases');
    if (databases || pooled) {
      this.logger.log({ databases, pooled }, 'attached existing databases to their region’s data-plane server');
    }
  }

  /**
   * The advisory lock of the region's placement turn (placementTurnKey; a server's removal takes it
   * too), for the transaction the context carries (the create takes it together with its plan's
   * lock, in one round trip).
   */
  regionLockKey(region: Region): string {
    return placementTurnKey(region);
  }

  /** Takes the region's placement turn (regionLockKey) for the rest of the transaction the context carries. */
  takeTurn(region: Region): Promise<void> {
    return this.databases.lockKeys(this.regionLockKey(region));
  }

  /**
   * Has the region's ACTIVE servers this process has no recent news of asked whether they answer,
   * in the background (DataPlane.askInBackground): the create that calls it is placed on what is
   * known now, the ones after it on what the answers say. Before the create's transaction: no
   * remote call is waited for, and none runs inside it.
   */
  async askAhead(region: Region): Promise<void> {
    this.dataPlane.askInBackground((await this.servers.activeIn(region)).map((s) => s.id));
  }

  /**
   * The region's ACTIVE servers (limited to `eligible` when given), best first: those that answer
   * before those that recently did not, then most free capacity, then fewest databases. Read within
   * the transaction the context carries, under the region's lock (regionLockKey).
   */
  async candidates(region: Region, eligible?: Set<string>): Promise<Candidate[]> {
    return (await this.databases.activeServersWithUsage(region))
      .filter(({ server }) => !eligible || eligible.has(server.id))
      .map(({ server, usage }) => ({
        server,
        usage,
        free: server.maxDatabases - usage.databases - usage.pooled,
        answering: this.dataPlane.answering(server.id),
      }))
      .sort(
        (a, b) => Number(b.answering) - Number(a.answering) || b.free - a.free || a.usage.databases - b.usage.databases,
      );
  }

  /** Databases (not finalized) and warm-pool entries per server (in the context's transaction, if any). */
  usage(serverIds: string[]): Promise<Map<string, ServerUsage>> {
    return this.databases.usageByServer(serverIds);
  }

  /** How many databases and warm-pool entries live on the server (in the context's transaction, if any). */
  async livingOn(serverId: string): Promise<number> {
    const u = (await this.usage([serverId])).get(serverId)!;
    return u.databases + u.pooled;
  }
}
