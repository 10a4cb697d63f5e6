import { lockForTransaction } from '../database/transaction-lock';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import type { Region } from '../config/regions';
import { DataPlaneServers, type DataPlaneServerView } from '../data-plane/data-plane-servers.service';

/** How full a server is: customer databases not yet finalized, and warm-pool entries. */
export interface ServerUsage {
  databases: number;
  pooled: number;
}

export interface Candidate {
  server: DataPlaneServerView;
  usage: ServerUsage;
  free: number;
}

/**
 * Where databases live. A new database goes to the ACTIVE server of its region with the most free
 * capacity (`max_databases` minus its databases and warm-pool entries), ties to the one with fewer
 * databases. Placements of one region take turns (a transaction-level advisory lock in the
 * metadata database, held for the create's short transaction only), so two creates never both take
 * a server's last free place.
 */
@Injectable()
export class Placement implements OnModuleInit {
  private readonly logger = new Logger(Placement.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly servers: DataPlaneServers,
  ) {}

  /**
   * An install from before the fleet: once its regions' servers are registered from the
   * environment, every database and warm-pool entry without a server is attached to the first
   * server of its region (the one server it has always lived on).
   */
  async onModuleInit(): Promise<void> {
    await this.servers.registerFromEnvironment();
    await this.attachUnplaced();
  }

  async attachUnplaced(): Promise<void> {
    const attach = (table: 'databases' | 'pooled_databases') =>
      this.dataSource.query(
        `UPDATE ${table} t SET server_id = (
            SELECT s.id FROM data_plane_servers s WHERE s.region = t.region ORDER BY s.created, s.id LIMIT 1)
          WHERE t.server_id IS NULL
            AND EXISTS (SELECT 1 FROM data_plane_servers s WHERE s.region = t.region)`,
      );
    const [, databases] = (await attach('databases')) as [unknown, number];
    const [, pooled] = (await attach('pooled_databases')) as [unknown, number];
    if (databases || pooled) {
      this.logger.log({ databases, pooled }, 'attached existing databases to their region’s data-plane server');
    }
  }

  /** Takes the region's placement turn for the rest of the caller's transaction. */
  async lockRegion(manager: EntityManager, region: Region): Promise<void> {
    await lockForTransaction(manager, `placement:${region}`);
  }

  /**
   * The region's ACTIVE servers (limited to `eligible` when given), best first: most free capacity,
   * then fewest databases. Read within the caller's transaction (after lockRegion).
   */
  async candidates(manager: EntityManager, region: Region, eligible?: Set<string>): Promise<Candidate[]> {
    const active = (await this.servers.activeWithin(manager, region)).filter((s) => !eligible || eligible.has(s.id));
    const usage = await this.usage(
      active.map((s) => s.id),
      manager,
    );
    return active
      .map((server) => {
        const u = usage.get(server.id) ?? { databases: 0, pooled: 0 };
        return { server, usage: u, free: server.maxDatabases - u.databases - u.pooled };
      })
      .sort((a, b) => b.free - a.free || a.usage.databases - b.usage.databases);
  }

  /** Databases (not finalized) and warm-pool entries per server. */
  async usage(
    serverIds: string[],
    manager: EntityManager = this.dataSource.manager,
  ): Promise<Map<string, ServerUsage>> {
    const result = new Map<string, ServerUsage>(serverIds.map((id) => [id, { databases: 0, pooled: 0 }]));
    if (!serverIds.length) return result;
    const rows = await manager.query<{ server_id: string; databases: string; pooled: string }[]>(
      `SELECT server_id, sum(d)::int AS databases, sum(p)::int AS pooled FROM (
          SELECT server_id, 1 AS d, 0 AS p FROM databases WHERE finalized IS NULL AND server_id = ANY($1)
          UNION ALL
          SELECT server_id, 0, 1 FROM pooled_databases WHERE server_id = ANY($1)) x
        GROUP BY server_id`,
      [serverIds],
    );
    for (const r of rows) result.set(r.server_id, { databases: Number(r.databases), pooled: Number(r.pooled) });
    return result;
  }

  /** How many databases and warm-pool entries live on the server (within the caller's transaction). */
  async livingOn(manager: EntityManager, serverId: string): Promise<number> {
    const u = (await this.usage([serverId], manager)).get(serverId)!;
    return u.databases + u.pooled;
  }
}
