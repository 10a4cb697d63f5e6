import { HttpStatus, Injectable, Logger } from '@nestjs/common';
import { MetadataTransactions } from '../database/metadata-transactions';
import { randomUUID } from 'node:crypto';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { AppConfig } from '../config/app-config';
import { regionId } from '../config/regions';
import { DataPlaneServers } from '../data-plane/data-plane-servers.service';
import { DataPlane } from '../data-plane/data-plane.service';
import { physicalDatabaseName } from '../data-plane/physical-names';
import { JobDispatcher } from '../queues/job-dispatcher';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { WorkspaceResponse } from '../workspaces/workspace.response';
import { WorkspacesService } from '../workspaces/workspaces.service';
import { finalizeJobId, provisionJobId } from './database-jobs';
import { databaseNotFound, isValidDatabaseName } from './database-name';
import { DatabasesRepository, type RowLockMode } from './databases.repository';
import { DatabaseEntity, DatabaseStatus } from './database.entity';
import { DatabaseResponse, DatabaseSummaryResponse } from './database.response';
import type { CreateDatabaseDto } from './dto/create-database.dto';
import { DEFAULT_DATABASE_PAGE } from './dto/list-databases-query.dto';
import { placementOf } from './database-lifecycle.service';
import { Placement } from './placement.service';
import { WarmPool } from './warm-pool.service';
import { isUuid } from '../common/http/uuid';
import { isUniqueViolation } from '../common/errors/unique-violation';
import { PlanLimits } from '../subscriptions/plan-limits.service';
import { messageOf } from '../common/errors/message-of';
import { OUTAGE_RETRY_AFTER_SECONDS } from '../common/errors/dependency-outage';

export interface DatabasePage {
  items: DatabaseResponse[];
  /** Cursor of the next page, when more remain. */
  next?: string;
}

/**
 * How long a sharded create's check waits for the other servers' answers once one server offers
 * citus: healthy servers answer in milliseconds, and one that does not answer is not waited for.
 */
const SHARDING_ANSWER_GRACE_MS = 200;

/** The advisory lock under which the databases of one workspace are counted against its plan. */
const planLockKey = (workspace: WorkspaceEntity) => `databases:${workspace.id}`;

/**
 * The database resource: its rules (names, regions, sharding), its representation, and the
 * desired-state rows the lifecycle jobs act on. Runs no SQL on the data plane except the read-only
 * sharding check; building and dropping happen in DatabaseLifecycle.
 */
@Injectable()
export class DatabasesService {
  private readonly logger = new Logger(DatabasesService.name);

  constructor(
    private readonly txHost: MetadataTransactions,
    private readonly databases: DatabasesRepository,
    private readonly config: AppConfig,
    private readonly dataPlane: DataPlane,
    private readonly servers: DataPlaneServers,
    private readonly placement: Placement,
    private readonly jobs: JobDispatcher,
    private readonly pool: WarmPool,
    private readonly workspaces: WorkspacesService,
    private readonly plans: PlanLimits,
  ) {}

  /**
   * Places the database on a server of its region and records it to build (REQUESTED), or hands
   * it a pre-built physical database from that region's warm pool (READY at once). Name clashes are
   * caught by the partial unique index, so concurrent creates of one name yield exactly one
   * database. A region whose servers are all full (or none ACTIVE) answers 503.
   *
   * `alongside` runs in the insert's transaction, after the insert: what it writes commits with the
   * new row or not at all (an instant database's claim link: a database no claim names would never
   * be claimed nor dropped). Metadata statements only (habit 14).
   */
  async create(
    workspace: WorkspaceEntity,
    dto: CreateDatabaseDto,
    options: {
      withinPlan?: boolean;
      alongside?: (created: DatabaseEntity) => Promise<void>;
      /** Its build goes before other waiting builds: a request waits for it (instant databases). */
      urgent?: boolean;
    } = {},
  ): Promise<DatabaseResponse> {
    const sharded = dto.sharded ?? false;
    const withinPlan = options.withinPlan ?? true;
    const countPlaced = () => this.databases.countPlaced(workspace.id);
    // A workspace at its plan's limit hears so before the region's servers are asked whether they
    // offer sharding (a 400 or a 503 would send it after the wrong fix). Without the plan's turn:
    // the check in the transaction below is the one that counts.
    if (sharded && withinPlan) await this.plans.assertRoomForDatabase(workspace.id, countPlaced);
    const eligible = sharded ? await this.serversOfferingSharding(dto) : undefined;
    await this.placement.askAhead(dto.region);
    const id = randomUUID();
    const usePool = !sharded && this.config.env.DATABASE_POOL_TARGET > 0;
    let entity: DatabaseEntity;
    try {
      entity = await this.txHost.withTransaction(async () => {
        // The plan's turn, then the region's placement turn, in one round trip.
        await this.databases.lockKeys(
          ...(withinPlan ? [planLockKey(workspace)] : []),
          this.placement.regionLockKey(dto.region),
        );
        if (withinPlan) await this.plans.assertRoomForDatabase(workspace.id, countPlaced);
        const candidates = await this.placement.candidates(dto.region, eligible);
        let serverId: string | undefined;
        let pooled: string | null = null;
        // The servers that answer first (a pooled database there, else room there), then, only when
        // none of them can take it, those that recently did not: the database is built (or usable)
        // once its server answers again, which beats refusing on what may be an old guess.
        for (const answering of [true, false]) {
          const tier = candidates.filter((c) => c.answering === answering);
          if (usePool) {
            // A pooled database already counts against its server: taking one never overfills it.
            for (const candidate of tier) {
              pooled = await this.pool.claim(candidate.server.id);
              if (pooled) {
                serverId = candidate.server.id;
                break;
              }
            }
          }
          if (!serverId && tier[0] && tier[0].free > 0) serverId = tier[0].server.id;
          if (serverId) break;
        }
        if (!serverId) throw this.regionFull(dto.region, candidates.length);
        const inserted = await this.databases.insert({
          id,
          workspaceId: workspace.id,
          name: dto.databaseName,
          region: dto.region,
          serverId,
          sharded,
          status: pooled ? DatabaseStatus.Ready : DatabaseStatus.Requested,
          physicalName: pooled ?? physicalDatabaseName(this.config.env.DATA_PLANE_NAME_PREFIX, id),
        });
        await options.alongside?.(inserted);
        return inserted;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw this.nameTaken(dto.databaseName);
      throw err;
    }
    if (entity.status === DatabaseStatus.Requested) {
      await this.jobs.dispatch(
        'ProvisionDatabase',
        { databaseId: entity.id, placement: placementOf(entity) },
        { jobId: provisionJobId(entity.id), urgent: options.urgent },
      );
    }
    if (usePool && entity.serverId) await this.pool.requestRefill(entity.serverId);
    return this.describe(entity, workspace);
  }

  /** The workspace's databases that are not deleted, oldest first, a page at a time. */
  async list(workspace: WorkspaceEntity, limit = DEFAULT_DATABASE_PAGE, cursor?: string): Promise<DatabasePage> {
    if (cursor && !(await this.databases.existsIn(cursor, workspace.id))) {
      throw new ApiException(ErrorCode.BadRequest, 'cursor is not a cursor this service issued');
    }
    const rows = await this.databases.pageOfLive(workspace.id, limit + 1, cursor);
    const page = rows.slice(0, limit);
    return {
      items: await Promise.all(page.map((d) => this.describe(d, workspace))),
      next: rows.length > limit ? page[page.length - 1].id : undefined,
    };
  }

  /** `prefetched`: the database as authentication already read it (see PrefetchedDatabase), if it did. */
  async get(workspace: WorkspaceEntity, name: string, prefetched?: DatabaseEntity | null): Promise<DatabaseResponse> {
    return this.describe(await this.findOperable(workspace, name, prefetched), workspace);
  }

  /**
   * Renames the database; its physical database (and every open connection) is untouched. The
   * write holds only while the row still has the name and state read, so a racing delete or
   * rename leaves one of the serial outcomes: a delete that committed first makes this 409, a
   * rename that committed first makes this 404 (nothing has the old name any more).
   */
  async rename(workspace: WorkspaceEntity, name: string, newName: string): Promise<DatabaseResponse> {
    const database = await this.findOperable(workspace, name);
    if (database.deleted) throw this.queuedForDeletion(database.name);
    const before = { id: database.id, name: database.name };
    // Named by its id, the database is that row whatever its name meanwhile: only its being live counts.
    const named = isUuid(name) ? undefined : before.name;
    if (newName !== database.name) {
      let renamed;
      try {
        renamed = await this.databases.renameIfLive(database.id, named, newName);
      } catch (err) {
        if (isUniqueViolation(err)) throw this.nameTaken(newName);
        throw err;
      }
      if (!renamed) {
        const now = await this.databases.findById(database.id);
        if (now?.deleted && (named === undefined || now.name === named)) throw this.queuedForDeletion(now.name);
        throw databaseNotFound(workspace, name);
      }
      database.name = newName;
    }
    return { ...(await this.describe(database, workspace)), parent: before };
  }

  /**
   * Queues the database for deletion: it leaves the list and frees its name at once, keeps working
   * (connections, credentials) until the grace period has passed, then a job finalizes it.
   * Deleting a database already queued answers it unchanged.
   */
  async delete(workspace: WorkspaceEntity, name: string): Promise<DatabaseResponse> {
    const database = await this.findOperable(workspace, name);
    if (!database.deleted) {
      const graceMs = this.config.env.DATABASE_DELETION_GRACE_SECONDS * 1000;
      const now = new Date();
      // Only while it still has the name read: a rename that committed since wins, and this
      // delete then finds nothing by the old name (404), as if it had come second. Named by its
      // id, the database is that row whatever its name meanwhile.
      const named = isUuid(name) ? undefined : database.name;
      const affected = await this.databases.markDeletedIfNamed(
        database.id,
        named,
        now,
        new Date(now.getTime() + graceMs),
      );
      // A concurrent delete may have won: answer what was recorded.
      const recorded = affected ? null : await this.databases.findById(database.id);
      if (recorded && ((named !== undefined && recorded.name !== named) || !recorded.deleted)) {
        throw databaseNotFound(workspace, name);
      }
      database.deleted = recorded?.deleted ?? now;
      database.deletionDueAt = recorded?.deletionDueAt ?? new Date(now.getTime() + graceMs);
      await this.jobs.dispatch(
        'FinalizeDatabaseDeletion',
        { databaseId: database.id },
        { jobId: finalizeJobId(database.id), delayMs: graceMs },
      );
    }
    return this.describe(database, workspace);
  }

  /**
   * Moves a database from one workspace to another (an instant database being claimed), inside the
   * transaction the context carries (the caller's; one of its own when there is none): the target's
   * plan must have room and no live database of the same name. Refusals are 400, as the target
   * cannot take this database.
   */
  moveToWorkspace(databaseId: string, fromWorkspaceId: string, target: WorkspaceEntity): Promise<DatabaseEntity> {
    return this.txHost.withTransaction(() => this.moveToWorkspaceInTransaction(databaseId, fromWorkspaceId, target));
  }

  private async moveToWorkspaceInTransaction(
    databaseId: string,
    fromWorkspaceId: string,
    target: WorkspaceEntity,
  ): Promise<DatabaseEntity> {
    const gone = () => new ApiException(ErrorCode.EntityNotFound, 'The database of this claim code no longer exists');
    const database = await this.databases.findLiveIn(databaseId, fromWorkspaceId);
    if (!database) throw gone();
    try {
      // The plan's turn, as creates take it, so parallel claims and creates never pass the limit. A
      // claim moves a database already placed: unlike a create (PlanLimits.assertRoomForDatabase) it
      // does not count the workspace's databases queued for deletion.
      await this.databases.lockKeys(planLockKey(target));
      await this.plans.assertRoomFor(target.id, 'databases', () => this.databases.countLive(target.id));
    } catch (err) {
      if (err instanceof ApiException && err.code === ErrorCode.ThresholdExceeded) {
        throw new ApiException(
          ErrorCode.BadRequest,
          `${err.body.message}; the workspace has no room for this database`,
        );
      }
      throw err;
    }
    const nameTaken = () =>
      new ApiException(ErrorCode.BadRequest, `The workspace already has a database named ${database.name}`);
    if (await this.databases.existsLiveNamed(target.id, database.name)) throw nameTaken();
    // Still live where it was: its code's expiry may have dropped it since it was read. A rename
    // (which takes no plan lock) may have taken the name since the check: the unique index says so.
    let moved: number;
    try {
      moved = await this.databases.moveToWorkspaceIfLiveIn(database.id, fromWorkspaceId, target.id);
    } catch (err) {
      if (isUniqueViolation(err)) throw nameTaken();
      throw err;
    }
    if (!moved) throw gone();
    database.workspaceId = target.id;
    return database;
  }

  /**
   * Queues a database for deletion due now if it is still live in that workspace (an unclaimed
   * instant database whose code expired); whether it did.
   */
  async deleteNowIfIn(databaseId: string, workspaceId: string): Promise<boolean> {
    const now = new Date();
    const affected = await this.databases.markDeletedNowIfIn(databaseId, workspaceId, now);
    if (!affected) return false;
    await this.jobs.dispatch('FinalizeDatabaseDeletion', { databaseId }, { jobId: finalizeJobId(databaseId) });
    return true;
  }

  /** `GET /databases/{id}` (the database's apiHost): for members of its workspace only. */
  async getVisible(id: string, developerId: string): Promise<DatabaseResponse> {
    const database = isUuid(id) ? await this.databases.findUnfinalizedWithWorkspace(id) : null;
    if (!database?.workspace || !(await this.workspaces.isMember(database.workspaceId, developerId))) {
      throw new ApiException(ErrorCode.EntityNotFound, `No database with id ${id} is visible to you`);
    }
    return this.describe(database, database.workspace);
  }

  /**
   * Ids of the databases (not deleted) of each of these workspaces, oldest first. Raw rows of two
   * columns: a developer may see 100k databases, which entities would cost seconds to build.
   */
  async idsByWorkspace(workspaceIds: string[]): Promise<Map<string, string[]>> {
    const result = new Map<string, string[]>(workspaceIds.map((id) => [id, []]));
    if (!workspaceIds.length) return result;
    const rows = await this.databases.idsOfWorkspaces(workspaceIds);
    for (const row of rows) result.get(row.workspace_id)?.push(row.id);
    return result;
  }

  /**
   * The database that operations on `{databaseName}` act on: the live one with that name, else the
   * most recently deleted one still queued for deletion (it keeps accepting operations until it is
   * finalized). Its id names it too (an id is never a name: names have no `-`), which is the only way
   * to reach one queued for deletion once a new database has its name (to revoke its credentials,
   * say). 404 otherwise. `prefetched`: that database as authentication already read it (see
   * PrefetchedDatabase), if it did: then no statement at all.
   */
  async findOperable(
    workspace: WorkspaceEntity,
    name: string,
    prefetched?: DatabaseEntity | null,
  ): Promise<DatabaseEntity> {
    if (prefetched === null) throw databaseNotFound(workspace, name);
    if (prefetched) return prefetched;
    // On every operation on a database (reads included): one indexed statement (by name: raw rows).
    const found = isUuid(name)
      ? await this.databases.findUnfinalizedIn(name, workspace.id)
      : isValidDatabaseName(name)
        ? await this.databases.findOperable(workspace.id, name)
        : null;
    if (!found) throw databaseNotFound(workspace, name);
    return found;
  }

  /**
   * Ids of the servers holding databases customers can use (READY, not finalized: a database queued
   * for deletion still works until it is), for the insights sampler's schedule.
   */
  serversWithUsable(): Promise<string[]> {
    return this.databases.serversWithUsable();
  }

  /** Physical names of up to `limit` of what is built on the server (READY databases, then ready warm-pool entries). */
  async builtOn(serverId: string, limit: number): Promise<string[]> {
    const databases = await this.databases.readyPhysicalNamesOn(serverId, limit);
    if (databases.length >= limit) return databases;
    return [...databases, ...(await this.pool.readyPhysicalNamesOn(serverId, limit - databases.length))];
  }

  /** The server's usable databases (as above), oldest first, for one insights pass; none for a key that is no id. */
  async usableOnServer(
    serverId: string,
  ): Promise<{ id: string; workspaceId: string; physicalName: string; created: Date }[]> {
    if (!isUuid(serverId)) return [];
    const rows = await this.databases.usableOnServer(serverId);
    return rows.map((d) => ({
      id: d.id,
      workspaceId: d.workspace_id,
      physicalName: d.physical_name,
      created: d.created,
    }));
  }

  /**
   * The database `{databaseId}` names in the workspace: its id (as published) or its name (the
   * live one, else one still queued for deletion). Finalized databases and other workspaces' are 404.
   */
  async findByIdOrName(workspace: WorkspaceEntity, idOrName: string): Promise<DatabaseEntity> {
    try {
      return await this.findOperable(workspace, idOrName);
    } catch (err) {
      if (err instanceof ApiException && err.code === ErrorCode.EntityNotFound) {
        throw new ApiException(
          ErrorCode.EntityNotFound,
          `No database with id or name ${idOrName} in workspace ${workspace.slug}`,
        );
      }
      throw err;
    }
  }

  /**
   * For those of `ids` queued for deletion (finalized ones included): when the deletion is (or was)
   * due, the moment their compute stops being billed (see deletionDueOf).
   */
  deletionDueTimes(ids: string[]): Promise<Map<string, Date>> {
    return this.databases.deletionDueTimes(ids);
  }

  /** The database row by id, whatever its state; null when there is none. */
  findRow(id: string): Promise<DatabaseEntity | null> {
    return this.databases.readById(id);
  }

  /**
   * Locks the database row for the rest of the transaction the context carries (serializes work on
   * one database); the caller opens it (MetadataTransactions.withTransaction).
   */
  lock(id: string, mode: RowLockMode): Promise<DatabaseEntity | null> {
    return this.databases.lock(id, mode);
  }

  /** Server and physical name of every database not finalized (raw rows, for the orphan-role sweep). */
  livePlacements(): Promise<{ server_id: string; physical_name: string }[]> {
    return this.databases.livePlacements();
  }

  /**
   * `GetDatabaseResponse`. `dbHost` names the public host of the server the database lives on;
   * `expandable` says whether its region has more than one ACTIVE server (room to grow). Both come
   * from the server directory, re-read every couple of seconds.
   */
  async describe(d: DatabaseEntity, workspace: WorkspaceEntity): Promise<DatabaseResponse> {
    const publicHost =
      d.status === DatabaseStatus.Ready && !d.finalized && d.serverId
        ? await this.servers.publicHost(d.serverId)
        : undefined;
    return {
      id: d.id,
      name: d.name,
      workspace: WorkspaceResponse.from(workspace),
      status: d.status,
      region: d.region,
      expandable: (await this.servers.activeIn(d.region)).length > 1,
      sharded: d.sharded,
      created: d.created,
      deleted: d.deleted ?? undefined,
      apiHost: `${this.config.publicUrl}/databases/${d.id}`,
      dbHost: publicHost ? DataPlane.connectionUri(publicHost, d.physicalName) : undefined,
    };
  }

  /** Live databases (not finalized) per server, for operators (`server:list`). */
  async countByServer(serverIds: string[]): Promise<Map<string, number>> {
    const usage = await this.placement.usage(serverIds);
    return new Map([...usage].map(([id, u]) => [id, u.databases]));
  }

  /** `Database`: the summary inside a credential. */
  summarize(d: DatabaseEntity, workspace: WorkspaceEntity): DatabaseSummaryResponse {
    return {
      id: d.id,
      name: d.name,
      workspace: WorkspaceResponse.from(workspace),
      status: d.status,
      regionId: regionId(d.region),
      created: d.created,
    };
  }

  /**
   * The region's ACTIVE servers that can host sharded databases (the citus extension is
   * installable); 503, as for any create, when the region has no ACTIVE server. Servers this process counts as not answering are not asked while another is
   * (see ServerAnswers); the others are asked at once, and once one offers citus the check waits
   * at most SHARDING_ANSWER_GRACE_MS more for the rest: a server that does not answer never costs
   * the create its connect timeout while a healthy one offers citus (the late ones are left out of
   * this create's placement; their answers, or their failure, still reach ServerAnswers).
   */
  private async serversOfferingSharding(dto: CreateDatabaseDto): Promise<Set<string>> {
    const active = await this.servers.activeIn(dto.region, true);
    // No server takes new databases (drained, disabled): the fleet's state, not the request's.
    if (!active.length) throw this.regionFull(dto.region, 0);
    const answering = active.filter((server) => this.dataPlane.answering(server.id));
    const asked = answering.length ? answering : active;
    const offering = new Set<string>();
    let unreachable = active.length - asked.length;
    let offered!: () => void;
    const firstOffer = new Promise<void>((resolve) => (offered = resolve));
    const answers = Promise.all(
      asked.map(async (server) => {
        try {
          if (await this.dataPlane.shardingAvailable(server.id)) {
            offering.add(server.id);
            offered();
          }
        } catch (err) {
          unreachable += 1;
          this.logger.error(
            { err: messageOf(err), region: dto.region, serverId: server.id, errorCode: ErrorCode.DbCreationFailure },
            'data-plane server unreachable',
          );
        }
      }),
    );
    let grace: NodeJS.Timeout | undefined;
    const enough = firstOffer.then(
      () => new Promise<void>((resolve) => (grace = setTimeout(resolve, SHARDING_ANSWER_GRACE_MS))),
    );
    try {
      await Promise.race([answers, enough]);
    } finally {
      clearTimeout(grace);
    }
    if (offering.size) return new Set(offering);
    if (unreachable) {
      throw new ApiException(
        ErrorCode.DbCreationFailure,
        `The data plane of region ${dto.region} could not be reached to check sharding support; retry later`,
        { status: HttpStatus.SERVICE_UNAVAILABLE, headers: { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) } },
      );
    }
    throw new ApiException(
      ErrorCode.FeatureIneligible,
      `Sharded databases need the citus extension, which no data-plane server of region ${dto.region} offers; create a regular database (sharded: false) instead`,
    );
  }

  private regionFull(region: string, active: number): ApiException {
    return new ApiException(
      ErrorCode.DbCreationFailure,
      active
        ? `No data-plane server of region ${region} has room for another database; retry later`
        : `No data-plane server of region ${region} takes new databases; retry later`,
      { status: HttpStatus.SERVICE_UNAVAILABLE, headers: { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) } },
    );
  }

  private queuedForDeletion(name: string): ApiException {
    return new ApiException(ErrorCode.DbStatusFailure, `Database ${name} is queued for deletion and cannot be renamed`);
  }

  private nameTaken(name: string): ApiException {
    return new ApiException(ErrorCode.DuplicateEntity, `A database named ${name} already exists in this workspace`);
  }
}
