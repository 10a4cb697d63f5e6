import { withinMs } from '../common/within-ms';
import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Client, escapeIdentifier, escapeLiteral, Pool, PoolClient, type QueryConfig, type QueryResult } from 'pg';
import { isConnectionFailure, NETWORK_ERROR_CODES } from '../common/errors/dependency-outage';
import { AppConfig } from '../config/app-config';
import type { Region } from '../config/regions';
import { DataPlaneServers, type DataPlaneTarget, UnopenableServer } from './data-plane-servers.service';
import {
  assertCredentialRoleName,
  assertPhysicalName,
  holderRoleName,
  isCredentialRoleName,
  ownerRoleName,
} from './physical-names';
import { ServerAnswers } from './server-answers';
import { tenantDatabaseConnection } from './tenant-session';
import { messageOf } from '../common/errors/message-of';

interface PgError {
  code?: string;
}

const DUPLICATE_OBJECT = '42710';
const DUPLICATE_DATABASE = '42P04';
const UNDEFINED_OBJECT = '42704';
const INVALID_CATALOG_NAME = '3D000';
/** Why background work on a server this process heard did not answer lately fails at once (see DataPlane.exclusively). */
const NOT_ANSWERING_LATELY = 'the data-plane server did not answer lately; left for a later attempt';
/** A statement's wait for a lock ran out (lock_timeout). */
const LOCK_NOT_AVAILABLE = '55P03';
/** DROP ROLE of a role something still depends on (a privilege granted to it, an object it owns). */
const DEPENDENT_OBJECTS_STILL_EXIST = '2BP01';
/** Two sessions creating the same role or database at once: the loser may see a catalog unique violation. */
const UNIQUE_VIOLATION = '23505';

/**
 * The query with a wait for its answer of its own (`query_timeout`, which pg's Client.query reads
 * per query before the connection's; @types/pg does not declare it).
 */
function timed<I extends unknown[]>(query: QueryConfig<I>, ms: number): QueryConfig<I> {
  return Object.assign(query, { query_timeout: ms });
}

/**
 * One row, `ok`: the database exists, belongs to the holder role (which its owner role is not a
 * member of), its owner role may connect, create schemas and temporary tables there, and PUBLIC may
 * not connect to it.
 */
function hardenedQuery(physical: string, holder: string): string {
  const owner = escapeLiteral(ownerRoleName(physical));
  return `SELECT pg_get_userbyid(d.datdba) = ${escapeLiteral(holder)}
                 AND NOT pg_has_role(${owner}, d.datdba, 'MEMBER')
                 AND has_database_privilege(${owner}, d.oid, 'CONNECT')
                 AND has_database_privilege(${owner}, d.oid, 'CREATE')
                 AND has_database_privilege(${owner}, d.oid, 'TEMPORARY')
                 AND NOT EXISTS (
              SELECT 1 FROM aclexplode(coalesce(d.datacl, acldefault('d', d.datdba))) a
               WHERE a.grantee = 0 AND a.privilege_type = 'CONNECT') AS ok
            FROM pg_database d
           WHERE d.datname = ${escapeLiteral(assertPhysicalName(physical))}`;
}

/**
 * Makes the holder role unless it exists (two builds at once: the loser's attempt is caught), and
 * the admin a member of it unless a superuser (see adminMemberOfUnlessSuperuser). No answer waited
 * for: it goes with the statements after it.
 */
function holderReady(holder: string): string {
  const h = escapeIdentifier(holder);
  return `DO $$BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ${escapeLiteral(holder)}) THEN
        BEGIN
          CREATE ROLE ${h} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
        END;
      END IF;
    END$$; ${adminMemberOfUnlessSuperuser(holder)}`;
}

/**
 * Gives the DATABASE object to the holder role and its owner role what owning it gave credentials
 * that they need (connect, create schemas, temporary tables; the public schema and everything in the
 * database stay the owner role's). One implicit transaction: no moment without the grant.
 */
function heldBy(holder: string, physical: string): string {
  const d = escapeIdentifier(assertPhysicalName(physical));
  return `ALTER DATABASE ${d} OWNER TO ${escapeIdentifier(holder)};
          REVOKE ALL ON DATABASE ${d} FROM PUBLIC;
          GRANT CONNECT, CREATE, TEMPORARY ON DATABASE ${d} TO ${escapeIdentifier(ownerRoleName(physical))}`;
}

/**
 * Makes the admin a member of `role` unless it is a superuser, decided by the server (no answer
 * waited for). A non-superuser admin (CREATEDB, CREATEROLE) needs that to create a database owned by
 * an owner role, and to set a credential role's default privileges, reassign what it owns and end
 * its sessions; a superuser has those powers without it.
 */
function adminMemberOfUnlessSuperuser(role: string): string {
  return `DO $$BEGIN
      IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE pg_catalog.format('GRANT %I TO CURRENT_USER', ${escapeLiteral(role)});
      END IF;
    END$$`;
}

/** A role name of the credential shape, for counting createLoginRole's statements. */
const NIL_ROLE = '00000000-0000-0000-0000-000000000000';

/**
 * A credential's login role as createLoginRole makes it: `create`, the statements sent as one
 * implicit transaction, and `again`, what a retry whose role exists already runs instead.
 */
function loginRoleStatements(
  role: string,
  owner: string,
  physical: string,
  verifier: string,
): { create: string[]; again: string } {
  const r = escapeIdentifier(role);
  const o = escapeIdentifier(owner);
  const password = escapeLiteral(verifier);
  return {
    create: [
      `CREATE ROLE ${r} LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD ${password} IN ROLE ${o}`,
      adminMemberOfUnlessSuperuser(role),
      `ALTER ROLE ${r} IN DATABASE ${escapeIdentifier(physical)} SET role = ${escapeLiteral(owner)}`,
      ...['TABLES', 'SEQUENCES', 'FUNCTIONS', 'TYPES', 'SCHEMAS'].map(
        (kind) => `ALTER DEFAULT PRIVILEGES FOR ROLE ${r} GRANT ALL ON ${kind} TO ${o}`,
      ),
    ],
    again: `ALTER ROLE ${r} PASSWORD ${password}`,
  };
}

function codeOf(err: unknown): string | undefined {
  return (err as PgError | null)?.code;
}

/**
 * Whether PostgreSQL refused a session because the database's own CONNECTION LIMIT is reached
 * (53300 "too many connections for database"), as opposed to the server's max_connections or a
 * role's limit.
 */
export function isDatabaseFull(err: unknown): boolean {
  return codeOf(err) === '53300' && /too many connections for database/i.test(err instanceof Error ? err.message : '');
}

/**
 * Whether the call waited out its connect timeout for a connection of the process's own pool, every
 * one of them busy with other calls (pg-pool's error): the caller is told to retry (503), but that
 * says how busy this process is, not that the server failed to answer.
 */
export function isOwnPoolBusy(err: unknown): boolean {
  return err instanceof Error && err.message === 'timeout exceeded when trying to connect';
}

/**
 * Whether an error means the server is not answering as it should (down, stalled, refusing,
 * overloaded, our timeouts), as opposed to a statement it refused on its merits.
 */
export function isUnavailability(err: unknown): boolean {
  const code = codeOf(err) ?? '';
  if (NETWORK_ERROR_CODES.has(code)) return true;
  // 08: connection exception, 53: insufficient resources, 57: operator intervention (57014 is
  // statement_timeout), 28: the admin login is refused, 55P03: lock_timeout.
  if (/^(08|53|57|28)/.test(code) || code === LOCK_NOT_AVAILABLE) return true;
  const message = messageOf(err);
  return /timeout|Connection terminated|connection.*(closed|ended)|not queryable/i.test(message);
}

/**
 * A data-plane call failed. `unavailable` says the server did not answer as it should (see
 * isUnavailability): the request answers 503 naming the region, and work is retried later.
 */
export class DataPlaneError extends Error {
  readonly code?: string;
  /**
   * Whether the server itself did not answer, which placement and the sweeps go by. Not when only
   * the one database refused the session (its CONNECTION LIMIT reached: the tenant holds all of its
   * sessions), nor when a statement gave up waiting for a lock (lock_timeout, 55P03: a session, a
   * tenant's own among them, holds what it needed), nor when the process's own pool had no connection
   * free in time (isOwnPoolBusy): those are `unavailable` for the caller (503, retry later), yet the
   * server answered.
   */
  readonly serverUnanswered: boolean;

  constructor(
    readonly region: Region,
    readonly serverId: string,
    readonly unavailable: boolean,
    cause: unknown,
  ) {
    super(messageOf(cause), { cause });
    this.name = 'DataPlaneError';
    this.code = codeOf(cause);
    this.serverUnanswered =
      unavailable && !isDatabaseFull(cause) && this.code !== LOCK_NOT_AVAILABLE && !isOwnPoolBusy(cause);
  }
}

/**
 * An admin session to one customer database, opened ahead of the work that needs it (see
 * DataPlane.openSession): connecting, with its SCRAM handshake, overlaps the caller's own work.
 * Used once by the call it is handed to, which closes it; `close` ends it unused.
 */
export class DatabaseSession {
  /** When it was asked for (see DataPlane.createLoginRole's deadline). */
  readonly openedAt = Date.now();

  /** @internal */
  constructor(
    readonly serverId: string,
    readonly physical: string,
    /** @internal Settles as the connection does; its failure surfaces in the call that uses it. */
    readonly client: Promise<Client>,
  ) {
    client.catch(() => undefined);
  }

  close(): void {
    this.client.then(closeInBackground, () => undefined);
  }
}

/**
 * Ends a short-lived connection without waiting for the server to finish closing it (about 2 ms of
 * backend exit on a local server): nothing the caller does depends on it.
 */
function closeInBackground(db: Client): void {
  db.end().catch(() => undefined);
}

/**
 * The only code that runs SQL on the regions' PostgreSQL servers (the data plane). Every name it
 * puts in SQL is derived from an id, checked against a strict pattern and escaped; every value is
 * a bind parameter or an escaped literal. One small admin pool per server (keyed by its id); per-database work
 * uses a short-lived client that is always closed. Nothing here holds a connection between calls.
 * Every connection has a connect timeout, `statement_timeout` and `lock_timeout` (DATA_PLANE_*), so
 * a stalled server costs a caller seconds, never a hang; every failure is a DataPlaneError saying
 * whether the server was unavailable.
 */
@Injectable()
export class DataPlane implements OnApplicationShutdown {
  private readonly logger = new Logger(DataPlane.name);
  /** Admin pools, one per server id. */
  private readonly pools = new Map<string, Pool>();
  /**
   * Sessions that hold `exclusively`'s advisory locks, one pool per server id: kept apart from the
   * admin pools, whose connections the locked work itself needs (sharing them could starve it).
   */
  private readonly lockPools = new Map<string, Pool>();
  /** Servers whose shared databases this process has already closed to PUBLIC. */
  private readonly lockedServers = new Set<string>();
  /** The admin URL each pool connects with. */
  private readonly poolUrls = new WeakMap<Pool, string>();

  constructor(
    private readonly config: AppConfig,
    private readonly servers: DataPlaneServers,
    private readonly answers: ServerAnswers,
  ) {
    servers.onGone((serverId) => this.letGo(serverId));
  }

  /**
   * Ends a removed server's pools (connections in use finish first) and forgets that its shared
   * databases were closed: nothing of it stays in this process, nor in data_plane_pool_connections.
   */
  private letGo(serverId: string): void {
    for (const pools of [this.pools, this.lockPools]) {
      const pool = pools.get(serverId);
      pools.delete(serverId);
      pool?.end().catch(() => undefined);
    }
    this.lockedServers.delete(serverId);
    this.answers.forget(serverId);
  }

  async onApplicationShutdown(): Promise<void> {
    const pools = [...this.pools.values(), ...this.lockPools.values()];
    this.pools.clear();
    this.lockPools.clear();
    await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
  }

  /**
   * Connections of each admin pool, labelled by the id of the server it reaches (never its URL or
   * credentials), for /metrics. The one place that knows how pools are keyed.
   */
  adminPoolStats(): { server: string; total: number; idle: number; waiting: number }[] {
    return [...this.pools].map(([serverId, pool]) => ({
      server: serverId,
      total: pool.totalCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
    }));
  }

  /** The connection URI of a customer database on a server with this public host (no user or password: those are the credential's). */
  static connectionUri(publicHost: string, physical: string): string {
    return `postgres://${publicHost}/${assertPhysicalName(physical)}`;
  }

  /** Whether the server can host sharded databases (the citus extension is installable there). */
  shardingAvailable(serverId: string): Promise<boolean> {
    return this.on(serverId, async (t) => {
      const { rowCount } = await this.admin(t).query("SELECT 1 FROM pg_available_extensions WHERE name = 'citus'");
      return (rowCount ?? 0) > 0;
    });
  }

  /** The server's PostgreSQL cluster identifier (see DataPlaneServerEntity.systemIdentifier). */
  systemIdentifier(serverId: string): Promise<string> {
    return this.on(serverId, async (t) => systemIdentifierOf(this.admin(t)));
  }

  databaseExists(serverId: string, physical: string): Promise<boolean> {
    return this.on(serverId, async (t) => {
      const { rowCount } = await this.admin(t).query('SELECT 1 FROM pg_database WHERE datname = $1', [
        assertPhysicalName(physical),
      ]);
      return (rowCount ?? 0) > 0;
    });
  }

  /**
   * Checks that a server can serve as a data-plane server before it is registered: the URL connects
   * (within the timeouts) and its role is a superuser or has CREATEDB and CREATEROLE; with
   * `holding`, also that the databases of those physical names are there (a new URL for a registered
   * server must reach that server). Throws a message saying what is missing (never the URL);
   * answers the cluster's identifier.
   */
  async checkAdmin(url: string, holding: string[] = []): Promise<{ systemIdentifier: string }> {
    const db = new Client({ ...this.connectionOptions(), connectionString: url });
    db.on('error', () => undefined);
    try {
      await db.connect();
      const { rows } = await db.query<{ rolsuper: boolean; rolcreatedb: boolean; rolcreaterole: boolean }>(
        'SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = current_user',
      );
      const role = rows[0];
      if (!role?.rolsuper && !(role?.rolcreatedb && role?.rolcreaterole)) {
        throw new Error('the admin role needs SUPERUSER, or CREATEDB and CREATEROLE');
      }
      if (holding.length) {
        const found = await db.query('SELECT 1 FROM pg_database WHERE datname = ANY($1)', [holding]);
        if (found.rowCount !== holding.length) {
          throw new Error(
            `it is not the server registered: ${holding.length - (found.rowCount ?? 0)} of the ${holding.length} of its databases looked for are not there`,
          );
        }
      }
      return { systemIdentifier: await systemIdentifierOf(db) };
    } finally {
      await db.end().catch(() => undefined);
    }
  }

  /**
   * Whether the server accepts a new admin session and answers a trivial query within the timeouts
   * (readiness). A fresh session, not a pooled one: a server whose logins hang (a catalog lock, no
   * free connection slots) is down for the work that needs new sessions.
   */
  async ping(serverId: string): Promise<boolean> {
    let target: DataPlaneTarget;
    try {
      target = await this.resolve(serverId);
    } catch {
      // Unopenable (noted), or removed since the caller read the fleet.
      return false;
    }
    const db = new Client({ ...this.connectionOptions(), connectionString: target.url });
    db.on('error', () => undefined);
    const askedAt = Date.now();
    try {
      await db.connect();
      await db.query('SELECT 1');
      this.answers.answered(serverId, askedAt);
      return true;
    } catch (err) {
      this.answers.unanswered(serverId, messageOf(err), askedAt);
      return false;
    } finally {
      await db.end().catch(() => undefined);
    }
  }

  /**
   * Whether anything answers at the server's address: a session, an error of PostgreSQL's own (a
   * refused login, a server starting up or out of connection slots) or any other answer (a TLS
   * handshake that fails, an authentication method refused), as against a refused, reset or timed
   * out connection, one closed before a word, or an unknown host. For `server:remove --lost`, which
   * must not write off a server that is only misconfigured or busy. Throws when this process cannot
   * open its admin URL.
   */
  async reachable(serverId: string): Promise<boolean> {
    const target = await this.servers.target(serverId);
    const db = new Client({ ...this.connectionOptions(), connectionString: target.url });
    db.on('error', () => undefined);
    try {
      await db.connect();
      return true;
    } catch (err) {
      return !isConnectionFailure(err);
    } finally {
      await db.end().catch(() => undefined);
    }
  }

  /**
   * Pings, in the background, those of the servers this process has no recent news of (see
   * ServerAnswers.startAsking): placement calls it before it reads its candidates, so a server that
   * stopped answering is noticed within about ASK_AGAIN_AFTER_MS plus the connect timeout by a
   * process that makes no other call there (an API replica without workers), and one that answers
   * again is taken back without a customer's database being the test. Never waited for.
   */
  askInBackground(serverIds: string[]): void {
    for (const serverId of serverIds) {
      if (!this.answers.startAsking(serverId)) continue;
      void this.ping(serverId)
        .catch(() => undefined)
        .finally(() => this.answers.doneAsking(serverId));
    }
  }

  /** Whether this process counts the server as answering (see ServerAnswers). */
  answering(serverId: string): boolean {
    return this.answers.answering(serverId);
  }

  /**
   * Creates (or finishes creating) a customer database: its NOLOGIN owner role, the database with
   * the default `CONNECTION LIMIT` (DATA_PLANE_DEFAULT_CONNECTION_LIMIT) held by the holder role
   * (see heldBy: its owner role may connect, create schemas and temporary tables, but not ALTER the
   * database), `CONNECT` and `TEMP` revoked from PUBLIC, and the public schema closed to PUBLIC and
   * owned by the owner role. Idempotent: a retry after a crash completes what is missing.
   * Answers whether the database came out hardened (see isDatabaseHardened), read in the same
   * session right after the statements that make it so; the session to the new database opens
   * meanwhile, so its connection and handshake overlap those statements.
   */
  buildDatabase(serverId: string, physical: string, options: { sharded?: boolean } = {}): Promise<boolean> {
    const owner = ownerRoleName(physical);
    const holder = this.holderRole;
    const env = this.config.env;
    return this.on(serverId, async (t) => {
      await this.lockSharedDatabases(t);
      let session: Promise<Client> | undefined;
      try {
        const hardened = await this.withAdmin(t, async (db) => {
          const o = db.escapeIdentifier(owner);
          const d = db.escapeIdentifier(assertPhysicalName(physical));
          // Statements that need no answer in between go to the server in one round trip each.
          const membership = `${holderReady(holder)}; ${adminMemberOfUnlessSuperuser(owner)}`;
          // CREATE DATABASE may wait for a checkpoint: it runs under DATA_PLANE_DATABASE_DDL_TIMEOUT_MS.
          const ddlTimeout = `SET statement_timeout = ${Math.trunc(env.DATA_PLANE_DATABASE_DDL_TIMEOUT_MS)}`;
          const roleMade = await this.ignoring(
            [DUPLICATE_OBJECT, UNIQUE_VIOLATION],
            db.query(
              `CREATE ROLE ${o} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
               ${membership}; ${ddlTimeout}`,
            ),
          );
          // The role was there already (a retry): the statements after it did not run.
          if (!roleMade) await db.query(`${membership}; ${ddlTimeout}`);
          // Built at the default envelope: no instance runs on a database before it is READY.
          const limit = Math.trunc(env.DATA_PLANE_DEFAULT_CONNECTION_LIMIT);
          const created = await this.ignoring(
            [DUPLICATE_DATABASE, UNIQUE_VIOLATION],
            db.query(`CREATE DATABASE ${d} OWNER ${db.escapeIdentifier(holder)} CONNECTION LIMIT ${limit}`),
          );
          // The database exists from here: the session to it opens while the admin statements run.
          session = this.connectTo(t, physical);
          session.catch(() => undefined);
          const results = (await db.query(
            `SET statement_timeout = ${Math.trunc(env.DATA_PLANE_STATEMENT_TIMEOUT_MS)};
             ${created ? '' : `ALTER DATABASE ${d} CONNECTION LIMIT ${limit};`}
             ${heldBy(holder, physical)};
             ${hardenedQuery(physical, holder)}`,
          )) as unknown as QueryResult<{ ok: boolean }>[];
          return results[results.length - 1].rows[0]?.ok === true;
        });
        const db = await (session as Promise<Client>);
        await db.query(
          `REVOKE ALL ON SCHEMA public FROM PUBLIC;
           ALTER SCHEMA public OWNER TO ${db.escapeIdentifier(owner)}
           ${options.sharded ? ';CREATE EXTENSION IF NOT EXISTS citus' : ''}`,
        );
        return hardened;
      } finally {
        session?.then(closeInBackground, () => undefined);
      }
    });
  }

  /** True when the database exists, is held as buildDatabase makes it and PUBLIC may not connect to it. */
  isDatabaseHardened(serverId: string, physical: string): Promise<boolean> {
    return this.on(serverId, async (t) => {
      const { rows } = await this.admin(t).query<{ ok: boolean }>(hardenedQuery(physical, this.holderRole));
      return rows[0]?.ok === true;
    });
  }

  /** The role that owns this deployment's customer databases on every server (see holderRoleName). */
  get holderRole(): string {
    return holderRoleName(this.config.env.DATA_PLANE_NAME_PREFIX);
  }

  /**
   * Of these databases on the server, those the holder role does not own (built by a release from
   * before it, when each belonged to its owner role, which its credentials could ALTER); those that
   * are gone are left out. One read of the catalog.
   */
  databasesNotHeld(serverId: string, physicals: string[]): Promise<string[]> {
    if (physicals.length === 0) return Promise.resolve([]);
    const names = physicals.map((p) => assertPhysicalName(p));
    return this.on(serverId, async (t) => {
      const { rows } = await this.admin(t).query<{ datname: string }>(
        `SELECT datname FROM pg_database
          WHERE datname = ANY($1) AND pg_get_userbyid(datdba) IS DISTINCT FROM $2 ORDER BY 1`,
        [names, this.holderRole],
      );
      return rows.map((r) => r.datname);
    });
  }

  /**
   * Gives an existing database to the holder role, as buildDatabase makes it (see heldBy); its owner
   * role keeps everything else. Idempotent.
   */
  holdDatabase(serverId: string, physical: string): Promise<void> {
    const holder = this.holderRole;
    return this.on(serverId, (t) =>
      this.withAdmin(t, async (db) => {
        await db.query(`${holderReady(holder)}; ${heldBy(holder, physical)}`);
      }),
    );
  }

  /**
   * Drops a customer database and every role of it: its sessions are terminated (WITH FORCE), then
   * each credential role among the members of its owner role, then the owner role. Other members
   * (a role an operator granted the owner role to, a previous admin) are not this database's to
   * drop: they only lose the membership with the owner role. Idempotent.
   */
  dropDatabase(serverId: string, physical: string): Promise<void> {
    const owner = ownerRoleName(physical);
    return this.on(serverId, (t) =>
      this.withAdmin(t, async (db) => {
        await this.withDatabaseDdlTimeout(db, () =>
          db.query(`DROP DATABASE IF EXISTS ${db.escapeIdentifier(assertPhysicalName(physical))} WITH (FORCE)`),
        );
        const members = await db.query<{ rolname: string }>(
          `SELECT r.rolname FROM pg_auth_members m
             JOIN pg_roles r ON r.oid = m.member JOIN pg_roles o ON o.oid = m.roleid
            WHERE o.rolname = $1 AND r.rolname <> current_user AND NOT r.rolsuper`,
          [owner],
        );
        for (const { rolname } of members.rows.filter((m) => isCredentialRoleName(m.rolname))) {
          await this.withRoleLock(db, rolname, async () => {
            await db.query('SELECT pg_terminate_backend(pid, $2) FROM pg_stat_activity WHERE usename = $1', [
              rolname,
              this.terminateWaitMs,
            ]);
            await this.dropRoleReleased(t, db, rolname);
          });
        }
        await this.dropRoleReleased(t, db, owner);
      }),
    );
  }

  /**
   * Starts opening an admin session to a customer database, for a call that takes one
   * (createLoginRole): the connection and its SCRAM handshake then overlap whatever the caller does
   * meanwhile (its intent transaction). Nothing is done on the server until that call.
   */
  openSession(serverId: string, physical: string): DatabaseSession {
    const client = this.on(serverId, async (t) => {
      await this.lockSharedDatabases(t);
      return this.connectTo(t, physical);
    });
    return new DatabaseSession(serverId, physical, client);
  }

  /**
   * Creates a credential's login role from a SCRAM-SHA-256 verifier (never a plaintext password):
   * no special powers, a member of the database's owner role and acting as it in that database
   * (`SET role` at login), so whatever any credential creates belongs to the owner role and stays
   * usable by all of them. Objects a session creates after `RESET ROLE` are covered by default
   * privileges for the owner role (and reassigned to it when the credential is dropped).
   * One implicit transaction, sent as one query, on a session to the database itself (opened by
   * openSession; closed here): a failure leaves no role behind. A role of that name that exists
   * already (a retry after an answer was lost) gets the verifier again, so finishing a create is
   * idempotent.
   */
  async createLoginRole(session: DatabaseSession, role: string, verifier: string): Promise<void> {
    try {
      assertCredentialRoleName(role);
      if (!verifier.startsWith('SCRAM-SHA-256$')) throw new Error('a credential role needs a SCRAM-SHA-256 verifier');
      const statements = loginRoleStatements(
        role,
        ownerRoleName(session.physical),
        assertPhysicalName(session.physical),
        verifier,
      );
      await this.on(session.serverId, () =>
        this.beforeDeadline(session, async () => {
          const db = await session.client;
          const made = await this.ignoring([DUPLICATE_OBJECT], db.query(statements.create.join(';\n')));
          if (!made) await db.query(statements.again);
        }),
      );
    } finally {
      session.close();
    }
  }

  /**
   * How long after its session was asked for (openSession) a createLoginRole waits at most: the
   * longest one data-plane query waits (DATA_PLANE_CONNECT_TIMEOUT_MS plus the longer of
   * DATA_PLANE_STATEMENT_TIMEOUT_MS and DATA_PLANE_DATABASE_DDL_TIMEOUT_MS, the connections'
   * query_timeout). It bounds the whole call, the opening of the session included, which may run
   * several queries (the shared databases' hardening, once per server and process).
   */
  get createLoginRoleDeadlineMs(): number {
    return this.connectionOptions().query_timeout;
  }

  /**
   * How long after its session was asked for a createLoginRole can still be making its role while
   * the server answers: the caller gives up at createLoginRoleDeadlineMs (closing the session), and
   * the role's statements the server may be running then (one transaction, committed by the last)
   * each end within `statement_timeout`. A server that stalls and runs them later still can; the
   * credentials sweep drops a role whose credential is marked dropped.
   */
  get createLoginRoleSettledMs(): number {
    const statements = loginRoleStatements(NIL_ROLE, 'owner', 'db', 'SCRAM-SHA-256$').create.length;
    return this.createLoginRoleDeadlineMs + statements * this.config.env.DATA_PLANE_STATEMENT_TIMEOUT_MS;
  }

  /** Runs createLoginRole's work, given up (unavailable) once createLoginRoleDeadlineMs have passed since the session was asked for. */
  private beforeDeadline(session: DatabaseSession, work: () => Promise<void>): Promise<void> {
    return withinMs(
      work(),
      session.openedAt + this.createLoginRoleDeadlineMs - Date.now(),
      () =>
        new Error(
          `timeout: the credential role was not made within ${this.createLoginRoleDeadlineMs} ms of its session being asked for`,
        ),
    );
  }

  /**
   * The credential-looking roles (UUID names, not superusers, not the admin itself) that are members
   * of the owner roles of the given physical databases on the server, with the database each
   * belongs to. Roles that are members of no owner role named here are never listed, and owner
   * roles are never credential-looking (their names are not UUIDs).
   */
  credentialRoleMembers(serverId: string, physicals: string[]): Promise<{ physical: string; role: string }[]> {
    if (physicals.length === 0) return Promise.resolve([]);
    const byOwner = new Map(physicals.map((p) => [ownerRoleName(p), p]));
    return this.on(serverId, async (t) => {
      const { rows } = await this.admin(t).query<{ role: string; owner: string }>(
        `SELECT r.rolname AS role, o.rolname AS owner FROM pg_auth_members m
           JOIN pg_roles r ON r.oid = m.member JOIN pg_roles o ON o.oid = m.roleid
          WHERE o.rolname = ANY($1) AND r.rolname <> current_user AND NOT r.rolsuper
          ORDER BY 2, 1`,
        [[...byOwner.keys()]],
      );
      return rows
        .filter((r) => isCredentialRoleName(r.role) && byOwner.has(r.owner))
        .map((r) => ({ physical: byOwner.get(r.owner)!, role: r.role }));
    });
  }

  /**
   * Sets the moment PostgreSQL stops accepting the role's password. False when the role is gone.
   * Takes its turn with the role's drops (see withRoleLock): the two would otherwise collide.
   */
  expireLoginRole(serverId: string, role: string, at: Date): Promise<boolean> {
    const sql = `ALTER ROLE ${escapeIdentifier(assertCredentialRoleName(role))} VALID UNTIL ${escapeLiteral(at.toISOString())}`;
    return this.on(serverId, (t) =>
      this.withAdmin(t, (admin) =>
        this.withRoleLock(admin, role, () => this.ignoring([UNDEFINED_OBJECT], admin.query(sql))),
      ),
    );
  }

  /**
   * Of these credential roles, those whose `VALID UNTIL` is not the moment given (roles that are
   * gone are left out): one read of the catalog, no write, so the sweep rewrites only what is wrong.
   */
  async rolesNotValidUntil(serverId: string, expected: { role: string; at: Date }[]): Promise<Set<string>> {
    if (expected.length === 0) return new Set();
    const roles = expected.map((e) => assertCredentialRoleName(e.role));
    const moments = expected.map((e) => e.at.toISOString());
    return this.on(serverId, async (t) => {
      const { rows } = await this.admin(t).query<{ role: string }>(
        `SELECT w.role FROM unnest($1::text[], $2::timestamptz[]) AS w(role, at)
           JOIN pg_roles r ON r.rolname = w.role
          WHERE r.rolvaliduntil IS DISTINCT FROM w.at`,
        [roles, moments],
      );
      return new Set(rows.map((r) => r.role));
    });
  }

  /**
   * Drops a credential's role: no new logins, its sessions terminated, then in one transaction in
   * its database whatever it still owns is reassigned to the owner role (so nothing another
   * credential uses disappears), its privileges dropped and the role dropped. Idempotent: a role
   * already gone is fine. Takes its turn with every other change of the role (see withRoleLock).
   */
  dropLoginRole(serverId: string, physical: string, role: string): Promise<void> {
    assertCredentialRoleName(role);
    const owner = ownerRoleName(physical);
    const r = escapeIdentifier(role);
    return this.on(serverId, (t) =>
      this.withAdmin(t, (admin) =>
        this.withRoleLock(admin, role, async () => {
          const exists = await this.ignoring([UNDEFINED_OBJECT], admin.query(`ALTER ROLE ${r} NOLOGIN`));
          if (!exists) return;
          await admin.query('SELECT pg_terminate_backend(pid, $2) FROM pg_stat_activity WHERE usename = $1', [
            role,
            this.terminateWaitMs,
          ]);
          const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [physical]);
          if (!rowCount) {
            // Its database (and with it everything the role owned there) is gone already.
            await this.dropRoleReleased(t, admin, role);
            return;
          }
          await this.dropRoleReleased(t, admin, role, physical, () =>
            this.withDatabase(t, physical, (db) =>
              this.inTransaction(db, async () => {
                const ownerExists = await db.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [owner]);
                if (ownerExists.rowCount) await db.query(`REASSIGN OWNED BY ${r} TO ${db.escapeIdentifier(owner)}`);
                await db.query(`DROP OWNED BY ${r}`);
                await db.query(`DROP ROLE ${r}`);
              }),
            ),
          );
        }),
      ),
    );
  }

  /**
   * Runs `work` (on `admin`, or on a session of its own it opens meanwhile) holding a session
   * advisory lock on the server named after the credential role: every change of one role (a
   * DELETE, the expiry job, the sweep, a rotation's or the sweep's `VALID UNTIL`, a finalization; in
   * any process) takes turns there, because PostgreSQL refuses concurrent changes of one role's
   * catalog row ("tuple concurrently updated", XX000) instead of waiting. The loser of a drop race
   * finds the role gone. One role's lock is the only advisory lock taken on the admin session, and
   * nothing holding it waits for another, so the waits cannot form a cycle; `lock_timeout` bounds
   * the wait (a drop holds it for at most its session terminations and its statements). The key
   * stays `drop-role:` so processes of the previous release, which took it only to drop, take turns too.
   */
  private async withRoleLock<T>(admin: PoolClient, role: string, work: () => Promise<T>): Promise<T> {
    const key = `drop-role:${assertCredentialRoleName(role)}`;
    await admin.query('SELECT pg_advisory_lock(hashtext($1))', [key]);
    try {
      return await work();
    } finally {
      // If the session broke, releasing it as broken ends the lock anyway; keep the first error.
      await admin.query('SELECT pg_advisory_unlock(hashtext($1))', [key]).catch(() => undefined);
    }
  }

  /**
   * Sets how many sessions the database accepts at once (`CONNECTION LIMIT`). The compute envelope
   * (the default plus its instances' connections) is applied with it. Idempotent.
   */
  setConnectionLimit(serverId: string, physical: string, limit: number): Promise<void> {
    if (!Number.isSafeInteger(limit) || limit < -1) throw new Error(`not a connection limit: ${limit}`);
    return this.on(serverId, async (t) => {
      await this.admin(t).query(
        `ALTER DATABASE ${escapeIdentifier(assertPhysicalName(physical))} CONNECTION LIMIT ${limit}`,
      );
    });
  }

  /**
   * The `CONNECTION LIMIT` of each of these databases on the server (those that are gone are left
   * out): one read of the catalog, no write, so the compute sweep rewrites only what is wrong.
   */
  connectionLimits(serverId: string, physicals: string[]): Promise<Map<string, number>> {
    if (physicals.length === 0) return Promise.resolve(new Map<string, number>());
    const names = physicals.map((p) => assertPhysicalName(p));
    return this.on(serverId, async (t) => {
      const { rows } = await this.admin(t).query<{ datname: string; datconnlimit: number }>(
        'SELECT datname, datconnlimit FROM pg_database WHERE datname = ANY($1)',
        [names],
      );
      return new Map<string, number>(rows.map((r) => [r.datname, r.datconnlimit]));
    });
  }

  /** Whether a role exists on the server (for operators and tests). */
  roleExists(serverId: string, role: string): Promise<boolean> {
    return this.on(serverId, async (t) => {
      const { rowCount } = await this.admin(t).query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
      return (rowCount ?? 0) > 0;
    });
  }

  /**
   * Runs `work` while holding a session advisory lock named `key` on the server itself, on a
   * session of its own (pooled per server, unlocked before it goes back): work on one database (a build, a finalization, a warm-pool refill) takes
   * turns across processes without any metadata lock open during data-plane calls. Takes the lock
   * or gives up at once (undefined): the run holding it finishes the work. If the server stops
   * answering, the lock goes with its session.
   *
   * `job`: the work of a job, which shares the process's job slots with other servers' jobs. On a
   * server this process heard did not answer lately (ServerAnswers), one such call at a time, at
   * most every few seconds, asks again; the others fail at once (a DataPlaneError saying the server
   * does not answer; the job retries later) instead of each holding a slot for the connect timeout
   * while other servers' builds wait. The reconciler's sweeps ask anyway: they make one call per
   * server and pass (see UnansweringServers), and the first pass after a server is back finishes
   * its work.
   */
  async exclusively<T>(
    serverId: string,
    key: string,
    work: () => Promise<T>,
    options: { job?: boolean } = {},
  ): Promise<T | undefined> {
    const target = await this.resolve(serverId);
    const asking = !!options.job && !this.answers.answering(target.id);
    if (asking && !this.answers.startAsking(target.id)) {
      // What it failed with last, so what a job records for operators says why.
      const reason = this.answers.lastFailure(target.id);
      throw new DataPlaneError(
        target.region,
        target.id,
        true,
        new Error(reason ? `${NOT_ANSWERING_LATELY} (${reason})` : NOT_ANSWERING_LATELY),
      );
    }
    let lock: PoolClient | undefined;
    let broken: Error | undefined;
    const askedAt = Date.now();
    try {
      try {
        lock = await this.lockPool(target).connect();
        // A try answers at once on a server that answers. One that stopped answering on the lock
        // session already open (a partition: what is sent there is lost) is known as such within
        // the connect timeout, not the connections' query_timeout (the DDL timeout and more): every
        // job meeting it would hold one of the process's job slots that long, and the other
        // servers' jobs would wait.
        const { rows } = await lock.query<{ locked: boolean }>(
          timed(
            { text: 'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked', values: [key] },
            this.config.env.DATA_PLANE_CONNECT_TIMEOUT_MS,
          ),
        );
        this.answers.answered(target.id, askedAt);
        if (!rows[0]?.locked) return undefined;
      } catch (err) {
        if (lock) broken = err instanceof Error ? err : new Error(String(err));
        throw this.failed(target, err, askedAt);
      } finally {
        if (asking) this.answers.doneAsking(target.id);
      }
      try {
        return await work();
      } finally {
        try {
          await lock.query(
            timed(
              { text: 'SELECT pg_advisory_unlock(hashtextextended($1, 0))', values: [key] },
              this.config.env.DATA_PLANE_CONNECT_TIMEOUT_MS,
            ),
          );
        } catch (err) {
          // A session that cannot say it let go is not reused: closing it releases the lock.
          broken = err instanceof Error ? err : new Error(String(err));
        }
      }
    } finally {
      lock?.release(broken);
    }
  }

  /**
   * Drops `role` (with `drop`, given with `home`, the role's own database, which `drop` takes care of;
   * otherwise DROP ROLE IF EXISTS on `admin`) once no other database of the server holds anything
   * for it. Every session sees every role of its server (`pg_roles`), so a tenant can grant
   * privileges on its own objects to another database's roles, and PostgreSQL refuses to drop a role
   * something depends on: those privileges are dropped first (DROP OWNED BY in each database
   * `pg_shdepend` names; it owns nothing there, having no way in). A grant made again in the moment
   * between is met by trying again, a few times; then the error is the caller's (a sweep tries again
   * at its next pass).
   */
  private async dropRoleReleased(
    t: DataPlaneTarget,
    admin: PoolClient,
    role: string,
    home: string | null = null,
    drop: () => Promise<unknown> = () => admin.query(`DROP ROLE IF EXISTS ${admin.escapeIdentifier(role)}`),
  ): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const { rows } = await admin.query<{ datname: string }>(
        `SELECT DISTINCT d.datname FROM pg_shdepend s JOIN pg_database d ON d.oid = s.dbid
          WHERE s.refclassid = 'pg_authid'::regclass AND d.datallowconn AND d.datname IS DISTINCT FROM $2
            AND s.refobjid = (SELECT oid FROM pg_roles WHERE rolname = $1)`,
        [role, home],
      );
      for (const { datname } of rows) {
        // A database dropped meanwhile took what it held with it.
        await this.ignoring(
          [INVALID_CATALOG_NAME],
          this.withDatabaseNamed(t, datname, (db) => db.query(`DROP OWNED BY ${db.escapeIdentifier(role)}`)),
        );
      }
      try {
        await drop();
        return;
      } catch (err) {
        if (codeOf(err) !== DEPENDENT_OBJECTS_STILL_EXIST || attempt === 3) throw err;
      }
    }
  }

  /**
   * Closes the server's shared databases (postgres, template1, the admin URL's database) to PUBLIC,
   * so a credential can connect to its own database only; the admin keeps an explicit grant.
   * Once per server and process; skipped when DATA_PLANE_LOCK_SHARED_DATABASES is off.
   */
  private async lockSharedDatabases(t: DataPlaneTarget): Promise<void> {
    if (!this.config.env.DATA_PLANE_LOCK_SHARED_DATABASES || this.lockedServers.has(t.id)) return;
    const adminDatabase = decodeURIComponent(new URL(t.url).pathname.replace(/^\//, '')) || 'postgres';
    try {
      await this.withAdmin(t, async (db) => {
        const openToPublic = async () =>
          (
            await db.query<{ datname: string }>(
              `SELECT datname FROM pg_database
                WHERE datname = ANY($1) AND datallowconn AND has_database_privilege('public', oid, 'CONNECT')`,
              [['postgres', 'template1', adminDatabase]],
            )
          ).rows.map((r) => r.datname);
        const open = await openToPublic();
        for (const datname of open) {
          const d = db.escapeIdentifier(datname);
          await db.query(`GRANT CONNECT ON DATABASE ${d} TO CURRENT_USER`);
          await db.query(`REVOKE CONNECT, TEMPORARY ON DATABASE ${d} FROM PUBLIC`);
        }
        // An admin that is no superuser and does not own them is only warned by PostgreSQL.
        const still = open.length ? await openToPublic() : [];
        if (still.length) {
          this.logger.warn(
            { region: t.region, serverId: t.id, databases: still },
            `the server's shared databases stay open to PUBLIC (the admin role may not close them): credentials can connect there, and one holding template1 open blocks CREATE DATABASE; as a superuser run REVOKE CONNECT, TEMPORARY ON DATABASE ${still.map((d) => db.escapeIdentifier(d)).join(', ')} FROM PUBLIC`,
          );
        }
      });
    } catch (err) {
      // An unavailable server fails the caller's work right after; try again next time.
      if (isUnavailability(err)) throw err;
      // Not fatal: customer databases are closed to PUBLIC regardless; operators see why here.
      this.logger.warn(
        { region: t.region, serverId: t.id, err: messageOf(err) },
        "could not close the server's shared databases to PUBLIC (credentials may connect to them)",
      );
    }
    this.lockedServers.add(t.id);
  }

  /**
   * Runs CREATE/DROP DATABASE with DATA_PLANE_DATABASE_DDL_TIMEOUT_MS as its statement timeout (they
   * may wait for a checkpoint), then puts the session's usual timeout back. Only jobs run these.
   */
  private async withDatabaseDdlTimeout<T>(db: PoolClient, work: () => Promise<T>): Promise<T> {
    const env = this.config.env;
    await db.query(`SET statement_timeout = ${Math.trunc(env.DATA_PLANE_DATABASE_DDL_TIMEOUT_MS)}`);
    const result = await work();
    await db.query(`SET statement_timeout = ${Math.trunc(env.DATA_PLANE_STATEMENT_TIMEOUT_MS)}`);
    return result;
  }

  /**
   * The server's target. One whose admin URL this process cannot open does not answer, as far as
   * this process can tell: that is noted (placement passes it by, the sweeps skip it) and its calls
   * fail as unavailable (503, retried later), not as an internal error.
   */
  private async resolve(serverId: string): Promise<DataPlaneTarget> {
    try {
      return await this.servers.target(serverId);
    } catch (err) {
      if (!(err instanceof UnopenableServer)) throw err;
      this.answers.unanswered(serverId, err.message, Date.now());
      throw new DataPlaneError(err.region, serverId, true, err);
    }
  }

  /**
   * Resolves the server and turns every failure into a DataPlaneError naming its region; whether
   * the server answered is noted for placement (ServerAnswers).
   */
  private async on<T>(serverId: string, work: (target: DataPlaneTarget) => Promise<T>): Promise<T> {
    const target = await this.resolve(serverId);
    const askedAt = Date.now();
    let result: T;
    try {
      result = await work(target);
    } catch (err) {
      throw this.failed(target, err, askedAt);
    }
    this.answers.answered(target.id, askedAt);
    return result;
  }

  /**
   * A failed call as a DataPlaneError (`err` itself when it is one), noting whether the server
   * answered: a refusal on the merits is an answer, and so is one database's full connection limit.
   */
  private failed(target: DataPlaneTarget, err: unknown, askedAt: number): DataPlaneError {
    const failure =
      err instanceof DataPlaneError ? err : new DataPlaneError(target.region, target.id, isUnavailability(err), err);
    if (failure.serverUnanswered) this.answers.unanswered(target.id, failure.message, askedAt);
    else this.answers.answered(target.id, askedAt);
    return failure;
  }

  /**
   * What the telemetry sampler needs of a server (see telemetry.ts): its admin pool, and the admin
   * URL of one of its databases (for the ready probe's own short-lived connection).
   */
  async telemetryAccess(serverId: string): Promise<{ admin: Pool; databaseUrl: (physical: string) => string }> {
    const target = await this.resolve(serverId);
    return {
      admin: this.admin(target),
      databaseUrl: (physical) => {
        const url = new URL(target.url);
        url.pathname = `/${assertPhysicalName(physical)}`;
        return url.toString();
      },
    };
  }

  /** How long pg_terminate_backend waits for a session to be gone: within the statement timeout. */
  private get terminateWaitMs(): number {
    return Math.max(0, Math.min(5000, this.config.env.DATA_PLANE_STATEMENT_TIMEOUT_MS - 1000));
  }

  /** Timeouts every data-plane connection carries. */
  private connectionOptions() {
    const env = this.config.env;
    return {
      connectionTimeoutMillis: env.DATA_PLANE_CONNECT_TIMEOUT_MS,
      statement_timeout: env.DATA_PLANE_STATEMENT_TIMEOUT_MS,
      lock_timeout: env.DATA_PLANE_LOCK_TIMEOUT_MS,
      // A server that stops answering altogether (no cancel reaches it) still frees the caller.
      query_timeout:
        Math.max(env.DATA_PLANE_STATEMENT_TIMEOUT_MS, env.DATA_PLANE_DATABASE_DDL_TIMEOUT_MS) +
        env.DATA_PLANE_CONNECT_TIMEOUT_MS,
      application_name: 'control-plane',
    };
  }

  private admin(t: DataPlaneTarget): Pool {
    return this.poolOf(this.pools, t, 4, 'data-plane connection lost');
  }

  private lockPool(t: DataPlaneTarget): Pool {
    return this.poolOf(this.lockPools, t, 16, 'data-plane lock session lost');
  }

  /**
   * The server's pool in `pools`, made on first use, to the admin URL the registry has open now (a
   * call that resolved the server before its URL changed, server:update --url, gets the pool of the
   * new one): a pool of another URL is ended and replaced, so an old URL never stays in use.
   */
  private poolOf(pools: Map<string, Pool>, t: DataPlaneTarget, max: number, lostMessage: string): Pool {
    const url = this.servers.openedUrl(t.id) ?? t.url;
    let pool = pools.get(t.id);
    if (pool && this.poolUrls.get(pool) !== url) {
      pools.delete(t.id);
      pool.end().catch(() => undefined);
      pool = undefined;
    }
    if (!pool) {
      pool = new Pool({ ...this.connectionOptions(), connectionString: url, max, idleTimeoutMillis: 10000 });
      this.poolUrls.set(pool, url);
      // An idle client that loses its connection must not take the process down.
      pool.on('error', (err) => this.logger.warn({ region: t.region, serverId: t.id, err: err.message }, lostMessage));
      // Nor a checked-out one (the pool listens to idle clients only), e.g. a lock session held
      // while its work runs: its pending or next query fails, and the holder releases it as broken.
      pool.on('connect', (client) => client.on('error', () => undefined));
      pools.set(t.id, pool);
    }
    return pool;
  }

  private async withAdmin<T>(t: DataPlaneTarget, work: (db: PoolClient) => Promise<T>): Promise<T> {
    const db = await this.admin(t).connect();
    let broken: Error | undefined;
    try {
      return await work(db);
    } catch (err) {
      broken = err instanceof Error ? err : new Error(String(err));
      throw err;
    } finally {
      db.release(broken);
    }
  }

  private async inTransaction(db: Client, work: () => Promise<void>): Promise<void> {
    await db.query('BEGIN');
    try {
      await work();
      await db.query('COMMIT');
    } catch (err) {
      await db.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }

  /** A short-lived admin connection to one customer database, always closed. */
  private withDatabase<T>(t: DataPlaneTarget, physical: string, work: (db: Client) => Promise<T>): Promise<T> {
    return this.withDatabaseNamed(t, assertPhysicalName(physical), work);
  }

  /** A short-lived admin connection to any database of the server, always closed. */
  private async withDatabaseNamed<T>(
    t: DataPlaneTarget,
    datname: string,
    work: (db: Client) => Promise<T>,
  ): Promise<T> {
    const db = await this.connectToNamed(t, datname);
    try {
      return await work(db);
    } finally {
      closeInBackground(db);
    }
  }

  /** Opens an admin connection to one customer database; the caller closes it. */
  private connectTo(t: DataPlaneTarget, physical: string): Promise<Client> {
    return this.connectToNamed(t, assertPhysicalName(physical));
  }

  private async connectToNamed(t: DataPlaneTarget, datname: string): Promise<Client> {
    const url = new URL(t.url);
    url.pathname = `/${encodeURIComponent(datname)}`;
    // With the safe search path: nothing of the tenant's in `public` is what the admin's statements call.
    const db = new Client({ ...this.connectionOptions(), ...tenantDatabaseConnection(url.toString()) });
    db.on('error', () => undefined);
    try {
      await db.connect();
    } catch (err) {
      closeInBackground(db);
      throw err;
    }
    return db;
  }

  /** Runs a statement; the given SQLSTATEs (e.g. "already exists") mean false instead of an error. */
  private async ignoring(codes: string[], statement: Promise<unknown>): Promise<boolean> {
    try {
      await statement;
      return true;
    } catch (err) {
      if (codes.includes(codeOf(err) ?? '')) return false;
      throw err;
    }
  }
}

/** A PostgreSQL cluster's identifier: the same on every connection to it, another on any other cluster. */
async function systemIdentifierOf(db: Pick<Client, 'query'>): Promise<string> {
  const { rows } = await db.query<{ id: string }>('SELECT system_identifier::text AS id FROM pg_control_system()');
  return rows[0].id;
}
