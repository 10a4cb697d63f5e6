import { MetadataTransactions } from '../database/metadata-transactions';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { SecretBox } from '../common/crypto/secret-box';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { messageOf } from '../common/errors/message-of';
import { AppConfig } from '../config/app-config';
import { CREATABLE_REGIONS, REGIONS, type Region } from '../config/regions';
import { type DataPlaneServerEntity, DataPlaneServerState } from './data-plane-server.entity';
import { DataPlaneServersRepository } from './data-plane-servers.repository';
import { placementTurnKey } from './placement-turn';
import { Reconciler } from '../queues/reconciler';

/** What everyone may know about a server: never its admin URL. */
export interface DataPlaneServerView {
  id: string;
  region: Region;
  publicHost: string;
  maxDatabases: number;
  state: DataPlaneServerState;
  created: Date;
  updated: Date;
}

/** Where the data plane connects for a server: its admin URL, opened from the sealed column. */
export interface DataPlaneTarget {
  id: string;
  region: Region;
  url: string;
  /** The sealed URL it was opened from: the row holding another one may name another URL (server:update --url). */
  sealed: string;
}

/**
 * What a module holding rows that name a server (finalized databases kept as tombstones) does to
 * them when the server is removed: it runs in the removal's transaction, which the context carries,
 * once nothing lives on the server any more (see DataPlaneServers.remove).
 */
export type ServerRelease = (serverId: string) => Promise<void>;

/** How long the directory (states, public hosts) may be reused before it is read again. */
const DIRECTORY_TTL_MS = 2000;
const REGISTRATION_LOCK = 'data-plane-servers:register';

/** `host:port` of a URL, with PostgreSQL's default port when it names none. */
export function hostWithPort(host: string): string {
  return /:\d+$/.test(host) ? host : `${host}:5432`;
}

const serverNotFound = (id: string) => new ApiException(ErrorCode.EntityNotFound, `No data-plane server ${id}`);

/**
 * A server whose admin URL this process cannot open: sealed with a key it does not have (a new
 * first key in CREDENTIAL_ENCRYPTION_KEYS given to some replicas before others), or damaged. To
 * this process it is a server that does not answer (see DataPlane.resolve).
 */
export class UnopenableServer extends Error {
  constructor(
    readonly serverId: string,
    readonly region: Region,
    cause: unknown,
  ) {
    super(`its admin URL cannot be opened here: ${messageOf(cause)}`, { cause });
    this.name = 'UnopenableServer';
  }
}

/**
 * The registry of data-plane servers (the `data_plane_servers` rows). Answers where a server is
 * (its opened admin URL, cached: it never changes once registered) and what the fleet looks like
 * (a directory of states and public hosts, re-read every couple of seconds, so a drain or a server
 * added by an operator command in another process is seen promptly; a server found removed at such
 * a read is forgotten, and its pools ended, see onGone).
 */
@Injectable()
export class DataPlaneServers implements OnModuleInit {
  private readonly logger = new Logger(DataPlaneServers.name);
  private readonly targets = new Map<string, DataPlaneTarget>();
  private cached?: { at: number; servers: Promise<DataPlaneServerView[]> };
  /** The last copy of the fleet read (see directory). */
  private lastRead?: DataPlaneServerView[];
  /** Directory reads begun, and the latest of them whose result was applied (see directory). */
  private readsBegun = 0;
  private readApplied = 0;
  private registered?: Promise<void>;
  private readonly releases = new Map<string, ServerRelease>();
  private readonly goneListeners: ((serverId: string) => void)[] = [];

  constructor(
    private readonly servers: DataPlaneServersRepository,
    private readonly txHost: MetadataTransactions,
    private readonly config: AppConfig,
    private readonly box: SecretBox,
    private readonly reconciler: Reconciler,
  ) {}

  async onModuleInit(): Promise<void> {
    // A server removed by another process (`server:remove`) is noticed at the next read of the
    // fleet: every reconcile pass reads it, besides placement, health and warm-pool reads.
    this.reconciler.register('data-plane-servers', () => this.directory(true));
    await this.registerFromEnvironment();
  }

  /**
   * Registers what to let go of (a server's connection pools) once a server this process had
   * resolved (see target) is removed, here or by another process.
   */
  onGone(listener: (serverId: string) => void): void {
    this.goneListeners.push(listener);
  }

  /**
   * Backward compatibility: a creatable region without any server gets one from
   * DATA_PLANE_URL_<REGION> (else DATA_PLANE_URL), with DATA_PLANE_PUBLIC_HOST[_<REGION>] and
   * DATA_PLANE_MAX_DATABASES. Replicas booting together take turns (a transaction-level advisory
   * lock), so a region gets exactly one. Once a region has a server, the environment is not read
   * for it again: the registry is the truth.
   */
  registerFromEnvironment(): Promise<void> {
    // Its own transaction: the promise is shared by the whole process, whoever calls first.
    this.registered ??= this.txHost
      .withNewTransaction(async () => {
        await this.servers.lockKey(REGISTRATION_LOCK);
        for (const region of CREATABLE_REGIONS) {
          if (await this.servers.existsIn(region)) continue;
          const url = this.config.dataPlaneUrl(region);
          const saved = await this.insert({
            region,
            url,
            publicHost: this.configuredPublicHost(region) ?? new URL(url).host,
            maxDatabases: this.config.env.DATA_PLANE_MAX_DATABASES,
          });
          this.logger.log({ region, serverId: saved.id }, 'data-plane server registered from the environment');
        }
      })
      .finally(() => (this.cached = undefined));
    return this.registered;
  }

  /**
   * Every server, oldest first (cached for a couple of seconds; `fresh` reads now). When the read
   * for a copy that has aged fails (the metadata database failing), the last copy read answers
   * instead, and the next call reads again: what only describes (a database's public host, whether
   * its region has more servers) is no reason to fail a request whose change has committed. A read
   * asked to be fresh, and a process's first read, still fail.
   */
  async directory(fresh = false): Promise<DataPlaneServerView[]> {
    if (fresh || !this.cached || Date.now() - this.cached.at > DIRECTORY_TTL_MS) {
      const read = ++this.readsBegun;
      const servers = this.servers.all().then((rows) => {
        const views = rows.map(viewOf);
        // A read begun before the one applied last (a fresh read overtook it) found an older fleet:
        // it answers its caller but neither becomes the copy nor lets go of what the newer one found.
        if (read > this.readApplied) {
          this.readApplied = read;
          this.forgetStale(rows);
          this.lastRead = views;
        }
        return views;
      });
      const cached = { at: Date.now(), servers };
      this.cached = cached;
      servers.catch(() => {
        if (this.cached === cached) this.cached = undefined;
      });
    }
    const last = this.lastRead;
    return fresh || !last ? this.cached.servers : this.cached.servers.catch(() => last);
  }

  /** One server as the directory knows it; read again when it is not (yet) there. */
  async view(id: string): Promise<DataPlaneServerView | undefined> {
    return (await this.directory()).find((s) => s.id === id) ?? (await this.directory(true)).find((s) => s.id === id);
  }

  /** The public host of a server, from the directory. */
  async publicHost(id: string): Promise<string | undefined> {
    return (await this.view(id))?.publicHost;
  }

  /**
   * Where to connect for a server (its admin URL is opened once per process). The fleet is read
   * first when this process's copy is more than a couple of seconds old (DIRECTORY_TTL_MS), so a
   * server removed or given a new URL by another process is seen at the next call to it, even in a
   * process that places nothing and runs no reconciler (an API with WORKERS=off). A failed read
   * leaves the copy as it is.
   */
  async target(id: string): Promise<DataPlaneTarget> {
    await this.directory().catch(() => undefined);
    const known = this.targets.get(id);
    if (known) return known;
    const row = await this.servers.findWithAdminUrl(id);
    if (!row) throw new Error(`no data-plane server ${id}`);
    let url: string;
    try {
      url = this.box.open(row.adminUrlCiphertext);
    } catch (err) {
      throw new UnopenableServer(row.id, row.region, err);
    }
    const target = { id: row.id, region: row.region, url, sealed: row.adminUrlCiphertext };
    this.targets.set(id, target);
    return target;
  }

  /** The admin URL this process has open for the server now, if it has one. */
  openedUrl(id: string): string | undefined {
    return this.targets.get(id)?.url;
  }

  /**
   * The server's state and capacity as the metadata database has them now (in the transaction the
   * context carries, if any), not the directory's copy: for decisions a stale copy would make wrong.
   */
  current(id: string): Promise<DataPlaneServerEntity | null> {
    return this.servers.findById(id);
  }

  /**
   * Registers what a module does to its rows that still name a server being removed (see
   * ServerRelease); `name` keeps a registration single.
   */
  onRemove(name: string, release: ServerRelease): void {
    this.releases.set(name, release);
  }

  /** The region's servers that take new databases. */
  async activeIn(region: Region, fresh = false): Promise<DataPlaneServerView[]> {
    return (await this.directory(fresh)).filter((s) => s.region === region && s.state === DataPlaneServerState.Active);
  }

  /**
   * Registers a server (the caller has checked that it answers and grants what the data plane
   * needs). Returns it without its URL.
   */
  async add(input: {
    region: Region;
    url: string;
    publicHost?: string;
    maxDatabases?: number;
    /** The cluster's (DataPlane.checkAdmin): a cluster registered already is refused. */
    systemIdentifier?: string;
  }): Promise<DataPlaneServerView> {
    if (!Object.hasOwn(REGIONS, input.region))
      throw new ApiException(ErrorCode.BadRequest, `Unknown region ${input.region}`);
    if (input.systemIdentifier !== undefined) await this.assertUnregistered(input.region, input.systemIdentifier);
    const saved = await this.txHost.withTransaction(() =>
      this.insert({
        region: input.region,
        url: input.url,
        publicHost: input.publicHost ?? new URL(input.url).host,
        maxDatabases: input.maxDatabases ?? this.config.env.DATA_PLANE_MAX_DATABASES,
        systemIdentifier: input.systemIdentifier ?? null,
      }),
    );
    this.cached = undefined;
    return viewOf(saved);
  }

  /**
   * Records the cluster identifiers of the servers registered before they were recorded, as far
   * as `identify` (a connection to each) answers: a server that does not answer stays unrecorded,
   * and so cannot be told apart from the next one added. One recorded already for another server of
   * its region (one cluster registered twice there before) is left unrecorded too.
   */
  async identifyRegistered(identify: (serverId: string) => Promise<string>): Promise<void> {
    for (const server of await this.servers.unidentified()) {
      const systemIdentifier = await identify(server.id).catch(() => undefined);
      if (systemIdentifier === undefined) continue;
      if (await this.servers.findBySystemIdentifier(server.region, systemIdentifier)) continue;
      await this.servers.update(server.id, { systemIdentifier }).catch((err: unknown) => {
        this.logger.warn({ serverId: server.id, err: messageOf(err) }, 'could not record the server’s identifier');
      });
    }
  }

  /**
   * Changes whether the server takes new databases. In the region's placement turn (see
   * changeInTurn): once a drain or a disable has returned, a create or a refill that chose the
   * server has committed (and counts there), and none places anything there any more.
   */
  async setState(id: string, state: DataPlaneServerState): Promise<DataPlaneServerView> {
    const changed = await this.changeInTurn(id, () => Promise.resolve({ state }));
    return viewOf(changed);
  }

  /**
   * Changes a server's capacity, the host customers connect to, or its admin URL (the caller has
   * checked the new one reaches the same server: server:update). A capacity below what lives on the
   * server only stops new placements there (nothing is moved); a new public host is what every
   * database on the server reports as `dbHost` from then on (each process's directory, within
   * seconds). A new admin URL is opened by every process at its next read of the fleet, its pools to
   * the server ending as with a removal (sessions in use finish).
   */
  async update(
    id: string,
    change: { maxDatabases?: number; publicHost?: string; url?: string; systemIdentifier?: string },
  ): Promise<DataPlaneServerView> {
    const changed = await this.changeInTurn(id, async (row) => {
      if (change.systemIdentifier !== undefined) {
        if (row.systemIdentifier !== null && row.systemIdentifier !== change.systemIdentifier) {
          throw new ApiException(
            ErrorCode.BadRequest,
            'The new URL reaches another PostgreSQL cluster than this server',
          );
        }
        await this.assertUnregistered(row.region, change.systemIdentifier, id);
      }
      return {
        ...(change.systemIdentifier !== undefined ? { systemIdentifier: change.systemIdentifier } : {}),
        ...(change.maxDatabases !== undefined ? { maxDatabases: change.maxDatabases } : {}),
        ...(change.publicHost !== undefined ? { publicHost: hostWithPort(change.publicHost) } : {}),
        ...(change.url !== undefined ? { adminUrlCiphertext: this.box.seal(change.url) } : {}),
      };
    });
    if (change.url !== undefined) this.forget(id, 'changed');
    return viewOf(changed);
  }

  /**
   * Writes what `change` (given the row, locked) answers to the server's row in the region's
   * placement turn, as a removal does (removeInTurn): a create or a refill that read the server as it
   * was has committed first, and one after reads the change (a lowered capacity, a drain). A server
   * removed meanwhile is not found (404), never answered as it was. Metadata statements only.
   */
  private async changeInTurn(
    id: string,
    change: (row: DataPlaneServerEntity) => Promise<Partial<DataPlaneServerEntity>>,
  ): Promise<DataPlaneServerEntity> {
    const changed = await this.txHost.withTransaction(async () => {
      const row = await this.lockInTurn(id);
      const values = await change(row);
      await this.servers.update(id, values);
      // Read again for what the database wrote too (`updated`); the row is locked, so still there.
      return (await this.servers.findById(id))!;
    });
    this.cached = undefined;
    return changed;
  }

  /**
   * Removes a server, refused for its creatable region's last one and while `inUse` counts anything
   * living on it; `inUse` runs in the removal's transaction (see removeInTurn).
   */
  async remove(id: string, inUse: () => Promise<number>): Promise<DataPlaneServerView> {
    const [removed] = await this.removeInTurn(id, async () => {
      const living = await inUse();
      if (living > 0) {
        throw new ApiException(
          ErrorCode.DbStatusFailure,
          `Data-plane server ${id} still holds ${living} database(s); it can be removed once none live on it (drain it and delete them first, or, if it is lost for good, server:disable it and remove it with --lost)`,
        );
      }
    });
    return removed;
  }

  /**
   * Removes a server lost for good, with what lived on it: only a DISABLED server (a step of its
   * own, taken first), and only while nothing answers at its address (`reachable`, asked before the
   * transaction: habit 14). `writeOff` runs in the removal's transaction, once the server row is
   * locked and still DISABLED, and says what was lost.
   */
  async removeLost<T>(
    id: string,
    reachable: () => Promise<boolean>,
    writeOff: () => Promise<T>,
  ): Promise<DataPlaneServerView & { lost: T }> {
    const assertDisabled = (row: DataPlaneServerEntity) => {
      if (row.state !== DataPlaneServerState.Disabled) {
        throw new ApiException(
          ErrorCode.DbStatusFailure,
          `Data-plane server ${id} is ${row.state}; only a DISABLED server can be removed as lost (server:disable it first)`,
        );
      }
    };
    const found = await this.servers.findById(id);
    if (!found) throw serverNotFound(id);
    assertDisabled(found);
    if (await reachable()) {
      throw new ApiException(
        ErrorCode.DbStatusFailure,
        `Data-plane server ${id} answers; it is not lost: delete its databases and remove it once they are finalized`,
      );
    }
    const [removed, lost] = await this.removeInTurn(id, (row) => {
      assertDisabled(row);
      return writeOff();
    });
    return { ...removed, lost };
  }

  /**
   * In the context's transaction: the region's placement turn, then the server's row locked (see
   * removeInTurn for why both); the row, or 404 when there is no such server (any more).
   */
  private async lockInTurn(id: string): Promise<DataPlaneServerEntity> {
    // A server's region never changes: read it to know which turn to take.
    const found = await this.servers.findById(id);
    if (!found) throw serverNotFound(id);
    await this.servers.lockKey(placementTurnKey(found.region));
    const row = await this.servers.lock(id);
    if (!row) throw serverNotFound(id);
    return row;
  }

  /**
   * Removes the server once `check` (run in the removal's transaction, which the context carries,
   * with the server row locked) has not refused; the server as it was, and what `check` answered.
   * Refused for a creatable region's last server. The region's placement turn (placementTurnKey)
   * is taken first, then the server row is locked: a create or a refill that chose the server has
   * committed its row by then (and is seen by `check`), and one that comes after reads the fleet
   * without the server.
   * A placement's read of the servers is a plain read, so the row lock alone would not order them:
   * the placement's insert would fail the foreign key once the removal committed. Rows that outlive
   * what lived there (finalized databases, kept for billing) are let go by their modules (onRemove)
   * in the same transaction, so the row can go; the foreign keys still refuse it if anything else
   * names it.
   */
  private async removeInTurn<T>(
    id: string,
    check: (row: DataPlaneServerEntity) => Promise<T>,
  ): Promise<[DataPlaneServerView, T]> {
    const removed = await this.txHost.withTransaction(async () => {
      const row = await this.lockInTurn(id);
      // A creatable region keeps a server: without one, the next process start would register the
      // environment's server there again (registerFromEnvironment), undoing the removal.
      if (CREATABLE_REGIONS.includes(row.region) && (await this.servers.countIn(row.region)) === 1) {
        throw new ApiException(
          ErrorCode.DbStatusFailure,
          `Data-plane server ${id} is the last server of region ${row.region}; add its replacement first (server:add), then remove it`,
        );
      }
      const checked = await check(row);
      for (const release of this.releases.values()) await release(id);
      await this.servers.delete(id);
      return [row, checked] as const;
    });
    this.cached = undefined;
    this.forget(id, 'removed');
    return [viewOf(removed[0]), removed[1]];
  }

  /**
   * Forgets every resolved server the rows just read no longer have (removed) or name with another
   * admin URL (opened again at the next call). A URL sealed again with another key
   * (`secrets:reseal`) is the same URL: only the sealed text is kept.
   */
  private forgetStale(rows: DataPlaneServerEntity[]): void {
    const sealed = new Map(rows.map((r) => [r.id, r.adminUrlCiphertext]));
    for (const [id, target] of [...this.targets]) {
      const now = sealed.get(id);
      if (now === undefined) this.forget(id, 'removed');
      else if (now !== target.sealed) {
        const url = this.openedOrNull(now);
        if (url === target.url) target.sealed = now;
        else if (url !== null) this.forget(id, 'changed');
        // Sealed with a key this process lacks (a reseal or a new URL before every process had the
        // key): the URL it has open keeps working, rather than every call to the server failing.
        else
          this.logger.error(
            { serverId: id },
            'admin URL sealed with a key this process does not have; keeping the one open',
          );
      }
    }
  }

  /** The URL sealed in `sealed`; null when no configured key opens it (target() then says why). */
  private openedOrNull(sealed: string): string | null {
    try {
      return this.box.open(sealed);
    } catch {
      return null;
    }
  }

  /** Forgets a removed or changed server: its opened admin URL, and (through onGone) its pools. */
  private forget(id: string, why: 'removed' | 'changed'): void {
    if (!this.targets.delete(id)) return;
    this.logger.log({ serverId: id }, `data-plane server ${why}: its connections are let go`);
    for (const listener of this.goneListeners) listener(id);
  }

  private configuredPublicHost(region: Region): string | undefined {
    return this.config.env[`DATA_PLANE_PUBLIC_HOST_${region}`] || this.config.env.DATA_PLANE_PUBLIC_HOST || undefined;
  }

  private insert(input: {
    region: Region;
    url: string;
    publicHost: string;
    maxDatabases: number;
    systemIdentifier?: string | null;
  }): Promise<DataPlaneServerEntity> {
    return this.servers.save({
      region: input.region,
      adminUrlCiphertext: this.box.seal(input.url),
      publicHost: hostWithPort(input.publicHost),
      maxDatabases: input.maxDatabases,
      state: DataPlaneServerState.Active,
      systemIdentifier: input.systemIdentifier ?? null,
    });
  }

  /** 409 when another server of the region is that cluster. */
  private async assertUnregistered(region: Region, systemIdentifier: string, except?: string): Promise<void> {
    const same = await this.servers.findBySystemIdentifier(region, systemIdentifier);
    if (same && same.id !== except) {
      throw new ApiException(
        ErrorCode.DuplicateEntity,
        `This PostgreSQL cluster is registered already in ${region}, as server ${same.id}`,
      );
    }
  }
}

/** What may be told of a server (an entity, or a raw row read with these names), never its admin URL. */
export function viewOf(row: DataPlaneServerView): DataPlaneServerView {
  return {
    id: row.id,
    region: row.region,
    publicHost: row.publicHost,
    maxDatabases: row.maxDatabases,
    state: row.state,
    created: row.created,
    updated: row.updated,
  };
}
