import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Client, escapeIdentifier, escapeLiteral, Pool, PoolClient } from 'pg';
import { AppConfig } from '../config/app-config';
import type { Region } from '../config/regions';
import { assertCredentialRoleName, assertPhysicalName, isCredentialRoleName, ownerRoleName } from './physical-names';

interface PgError {
  code?: string;
}

const DUPLICATE_OBJECT = '42710';
const DUPLICATE_DATABASE = '42P04';
const UNDEFINED_OBJECT = '42704';
/** Two sessions creating the same role or database at once: the loser may see a catalog unique violation. */
const UNIQUE_VIOLATION = '23505';
const CONNECT_TIMEOUT_MS = 5000;
/** How long pg_terminate_backend waits for a session to be gone (PostgreSQL 14+). */
const TERMINATE_WAIT_MS = 5000;

function codeOf(err: unknown): string | undefined {
  return (err as PgError | null)?.code;
}

/**
 * The only code that runs SQL on the regions' PostgreSQL servers (the data plane). Every name it
 * puts in SQL is derived from an id, checked against a strict pattern and escaped; every value is
 * a bind parameter or an escaped literal. One small admin pool per server URL; per-database work
 * uses a short-lived client that is always closed. Nothing here holds a connection between calls.
 */
@Injectable()
export class DataPlane implements OnApplicationShutdown {
  private readonly logger = new Logger(DataPlane.name);
  private readonly pools = new Map<string, Pool>();
  /** Server URLs whose shared databases this process has already closed to PUBLIC. */
  private readonly lockedServers = new Set<string>();

  constructor(private readonly config: AppConfig) {}

  async onApplicationShutdown(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
  }

  /**
   * Connections of each admin pool, labelled by the server it reaches (host:port, never the
   * credentials), for /metrics. The one place that knows how pools are keyed.
   */
  adminPoolStats(): { server: string; total: number; idle: number; waiting: number }[] {
    return [...this.pools].map(([url, pool]) => ({
      server: new URL(url).host,
      total: pool.totalCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
    }));
  }

  /** `host:port` customers connect to for databases of this region. */
  publicHost(region: Region): string {
    const configured = this.config.env[`DATA_PLANE_PUBLIC_HOST_${region}`] || this.config.env.DATA_PLANE_PUBLIC_HOST;
    const url = new URL(this.config.dataPlaneUrl(region));
    const host = configured || url.host;
    return /:\d+$/.test(host) ? host : `${host}:5432`;
  }

  /** The connection URI of a customer database (no user or password: those are the credential's). */
  connectionUri(region: Region, physical: string): string {
    return `postgres://${this.publicHost(region)}/${assertPhysicalName(physical)}`;
  }

  /** Whether the region's server can host sharded databases (the citus extension is installable there). */
  async shardingAvailable(region: Region): Promise<boolean> {
    const { rowCount } = await this.admin(region).query("SELECT 1 FROM pg_available_extensions WHERE name = 'citus'");
    return (rowCount ?? 0) > 0;
  }

  async databaseExists(region: Region, physical: string): Promise<boolean> {
    const { rowCount } = await this.admin(region).query('SELECT 1 FROM pg_database WHERE datname = $1', [
      assertPhysicalName(physical),
    ]);
    return (rowCount ?? 0) > 0;
  }

  /**
   * Creates (or finishes creating) a customer database: its NOLOGIN owner role, the database owned
   * by it, `CONNECT` and `TEMP` revoked from PUBLIC, and the public schema closed to PUBLIC and
   * owned by the owner role. Idempotent: a retry after a crash completes what is missing.
   */
  async buildDatabase(region: Region, physical: string, options: { sharded?: boolean } = {}): Promise<void> {
    const owner = ownerRoleName(physical);
    await this.lockSharedDatabases(region);
    await this.withAdmin(region, async (db) => {
      const o = db.escapeIdentifier(owner);
      const d = db.escapeIdentifier(assertPhysicalName(physical));
      await this.ignoring(
        [DUPLICATE_OBJECT, UNIQUE_VIOLATION],
        db.query(`CREATE ROLE ${o} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS`),
      );
      // A non-superuser admin (CREATEDB, CREATEROLE) must be a member of a role to create databases it owns.
      const { rows } = await db.query<{ rolsuper: boolean }>(
        'SELECT rolsuper FROM pg_roles WHERE rolname = current_user',
      );
      if (!rows[0]?.rolsuper) await db.query(`GRANT ${o} TO CURRENT_USER`);
      const created = await this.ignoring(
        [DUPLICATE_DATABASE, UNIQUE_VIOLATION],
        db.query(`CREATE DATABASE ${d} OWNER ${o}`),
      );
      if (!created) await db.query(`ALTER DATABASE ${d} OWNER TO ${o}`);
      await db.query(`REVOKE ALL ON DATABASE ${d} FROM PUBLIC`);
    });
    await this.withDatabase(region, physical, async (db) => {
      const o = db.escapeIdentifier(owner);
      await db.query('REVOKE ALL ON SCHEMA public FROM PUBLIC');
      await db.query(`ALTER SCHEMA public OWNER TO ${o}`);
      if (options.sharded) await db.query('CREATE EXTENSION IF NOT EXISTS citus');
    });
  }

  /** True when the database exists, belongs to its owner role and PUBLIC may not connect to it. */
  async isDatabaseHardened(region: Region, physical: string): Promise<boolean> {
    const { rows } = await this.admin(region).query<{ ok: boolean }>(
      `SELECT pg_get_userbyid(d.datdba) = $2 AND NOT EXISTS (
                SELECT 1 FROM aclexplode(coalesce(d.datacl, acldefault('d', d.datdba))) a
                 WHERE a.grantee = 0 AND a.privilege_type = 'CONNECT') AS ok
         FROM pg_database d
        WHERE d.datname = $1`,
      [assertPhysicalName(physical), ownerRoleName(physical)],
    );
    return rows[0]?.ok === true;
  }

  /**
   * Drops a customer database and every role of it: its sessions are terminated (WITH FORCE), then
   * each credential role among the members of its owner role, then the owner role. Other members
   * (a role an operator granted the owner role to, a previous admin) are not this database's to
   * drop: they only lose the membership with the owner role. Idempotent.
   */
  async dropDatabase(region: Region, physical: string): Promise<void> {
    const owner = ownerRoleName(physical);
    await this.withAdmin(region, async (db) => {
      await db.query(`DROP DATABASE IF EXISTS ${db.escapeIdentifier(assertPhysicalName(physical))} WITH (FORCE)`);
      const members = await db.query<{ rolname: string }>(
        `SELECT r.rolname FROM pg_auth_members m
           JOIN pg_roles r ON r.oid = m.member JOIN pg_roles o ON o.oid = m.roleid
          WHERE o.rolname = $1 AND r.rolname <> current_user AND NOT r.rolsuper`,
        [owner],
      );
      for (const { rolname } of members.rows.filter((m) => isCredentialRoleName(m.rolname))) {
        await db.query('SELECT pg_terminate_backend(pid, $2) FROM pg_stat_activity WHERE usename = $1', [
          rolname,
          TERMINATE_WAIT_MS,
        ]);
        await db.query(`DROP ROLE IF EXISTS ${db.escapeIdentifier(rolname)}`);
      }
      await db.query(`DROP ROLE IF EXISTS ${db.escapeIdentifier(owner)}`);
    });
  }

  /**
   * Creates a credential's login role from a SCRAM-SHA-256 verifier (never a plaintext password):
   * no special powers, a member of the database's owner role and acting as it in that database
   * (`SET role` at login), so whatever any credential creates belongs to the owner role and stays
   * usable by all of them. Objects a session creates after `RESET ROLE` are covered by default
   * privileges for the owner role (and reassigned to it when the credential is dropped).
   * One transaction on a connection to the database itself: a failure leaves no role behind.
   */
  async createLoginRole(region: Region, physical: string, role: string, verifier: string): Promise<void> {
    assertCredentialRoleName(role);
    if (!verifier.startsWith('SCRAM-SHA-256$')) throw new Error('a credential role needs a SCRAM-SHA-256 verifier');
    const owner = ownerRoleName(physical);
    await this.lockSharedDatabases(region);
    await this.withDatabase(region, physical, async (db) => {
      const r = db.escapeIdentifier(role);
      const o = db.escapeIdentifier(owner);
      await this.inTransaction(db, async () => {
        await db.query(
          `CREATE ROLE ${r} LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS ` +
            `PASSWORD ${db.escapeLiteral(verifier)} IN ROLE ${o}`,
        );
        await db.query(
          `ALTER ROLE ${r} IN DATABASE ${db.escapeIdentifier(assertPhysicalName(physical))} SET role = ${db.escapeLiteral(owner)}`,
        );
        for (const kind of ['TABLES', 'SEQUENCES', 'FUNCTIONS', 'TYPES', 'SCHEMAS']) {
          await db.query(`ALTER DEFAULT PRIVILEGES FOR ROLE ${r} GRANT ALL ON ${kind} TO ${o}`);
        }
      });
    });
  }

  /**
   * The credential-looking roles (UUID names, not superusers, not the admin itself) that are members
   * of the owner roles of the given physical databases on the region's server, with the database
   * each belongs to. Roles that are members of no owner role named here are never listed, and owner
   * roles are never credential-looking (their names are not UUIDs).
   */
  async credentialRoleMembers(region: Region, physicals: string[]): Promise<{ physical: string; role: string }[]> {
    if (physicals.length === 0) return [];
    const byOwner = new Map(physicals.map((p) => [ownerRoleName(p), p]));
    const { rows } = await this.admin(region).query<{ role: string; owner: string }>(
      `SELECT r.rolname AS role, o.rolname AS owner FROM pg_auth_members m
         JOIN pg_roles r ON r.oid = m.member JOIN pg_roles o ON o.oid = m.roleid
        WHERE o.rolname = ANY($1) AND r.rolname <> current_user AND NOT r.rolsuper
        ORDER BY 2, 1`,
      [[...byOwner.keys()]],
    );
    return rows
      .filter((r) => isCredentialRoleName(r.role) && byOwner.has(r.owner))
      .map((r) => ({ physical: byOwner.get(r.owner)!, role: r.role }));
  }

  /** Sets the moment PostgreSQL stops accepting the role's password. False when the role is gone. */
  async expireLoginRole(region: Region, role: string, at: Date): Promise<boolean> {
    const sql = `ALTER ROLE ${escapeIdentifier(assertCredentialRoleName(role))} VALID UNTIL ${escapeLiteral(at.toISOString())}`;
    return this.ignoring([UNDEFINED_OBJECT], this.admin(region).query(sql));
  }

  /**
   * Drops a credential's role: no new logins, its sessions terminated, then in one transaction in
   * its database whatever it still owns is reassigned to the owner role (so nothing another
   * credential uses disappears), its privileges dropped and the role dropped. Idempotent: a role
   * already gone is fine.
   */
  async dropLoginRole(region: Region, physical: string, role: string): Promise<void> {
    assertCredentialRoleName(role);
    const owner = ownerRoleName(physical);
    const r = escapeIdentifier(role);
    // Drops of one role (a DELETE, the expiry job, the sweep; in any process) take turns: PostgreSQL
    // refuses concurrent changes of one role ("tuple concurrently updated"). The loser finds it gone.
    await this.withAdmin(region, async (admin) => {
      await admin.query('SELECT pg_advisory_lock(hashtext($1))', [`drop-role:${role}`]);
      try {
        const exists = await this.ignoring([UNDEFINED_OBJECT], admin.query(`ALTER ROLE ${r} NOLOGIN`));
        if (!exists) return;
        await admin.query('SELECT pg_terminate_backend(pid, $2) FROM pg_stat_activity WHERE usename = $1', [
          role,
          TERMINATE_WAIT_MS,
        ]);
        const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [physical]);
        if (!rowCount) {
          // Its database (and with it everything the role owned there) is gone already.
          await admin.query(`DROP ROLE IF EXISTS ${r}`);
          return;
        }
        await this.withDatabase(region, physical, (db) =>
          this.inTransaction(db, async () => {
            const ownerExists = await db.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [owner]);
            if (ownerExists.rowCount) await db.query(`REASSIGN OWNED BY ${r} TO ${db.escapeIdentifier(owner)}`);
            await db.query(`DROP OWNED BY ${r}`);
            await db.query(`DROP ROLE ${r}`);
          }),
        );
      } finally {
        // If the session broke, releasing it as broken ends the lock anyway; keep the first error.
        await admin.query('SELECT pg_advisory_unlock(hashtext($1))', [`drop-role:${role}`]).catch(() => undefined);
      }
    });
  }

  /**
   * Closes the server's shared databases (postgres, template1, the admin URL's database) to PUBLIC,
   * so a credential can connect to its own database only; the admin keeps an explicit grant.
   * Once per server and process; skipped when DATA_PLANE_LOCK_SHARED_DATABASES is off.
   */
  async lockSharedDatabases(region: Region): Promise<void> {
    const url = this.config.dataPlaneUrl(region);
    if (!this.config.env.DATA_PLANE_LOCK_SHARED_DATABASES || this.lockedServers.has(url)) return;
    const adminDatabase = decodeURIComponent(new URL(url).pathname.replace(/^\//, '')) || 'postgres';
    try {
      await this.withAdmin(region, async (db) => {
        const { rows } = await db.query<{ datname: string }>(
          `SELECT datname FROM pg_database
            WHERE datname = ANY($1) AND datallowconn AND has_database_privilege('public', oid, 'CONNECT')`,
          [['postgres', 'template1', adminDatabase]],
        );
        for (const { datname } of rows) {
          const d = db.escapeIdentifier(datname);
          await db.query(`GRANT CONNECT ON DATABASE ${d} TO CURRENT_USER`);
          await db.query(`REVOKE CONNECT, TEMPORARY ON DATABASE ${d} FROM PUBLIC`);
        }
      });
    } catch (err) {
      // Not fatal: customer databases are closed to PUBLIC regardless; operators see why here.
      this.logger.warn(
        { region, err: err instanceof Error ? err.message : String(err) },
        "could not close the server's shared databases to PUBLIC (credentials may connect to them)",
      );
    }
    this.lockedServers.add(url);
  }

  /**
   * Sets how many sessions the database accepts at once (`CONNECTION LIMIT`; -1: no limit of its
   * own). Dedicated compute applies its instances' resource envelope with it. Idempotent.
   */
  async setConnectionLimit(region: Region, physical: string, limit: number): Promise<void> {
    if (!Number.isSafeInteger(limit) || limit < -1) throw new Error(`not a connection limit: ${limit}`);
    await this.admin(region).query(
      `ALTER DATABASE ${escapeIdentifier(assertPhysicalName(physical))} CONNECTION LIMIT ${limit}`,
    );
  }

  /** Whether a role exists on the region's server (for operators and tests). */
  async roleExists(region: Region, role: string): Promise<boolean> {
    const { rowCount } = await this.admin(region).query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
    return (rowCount ?? 0) > 0;
  }

  /**
   * What the telemetry sampler needs of a region's server (see telemetry.ts): its admin pool, and
   * the admin URL of one of its databases (for the ready probe's own short-lived connection).
   */
  telemetryAccess(region: Region): { admin: Pool; databaseUrl: (physical: string) => string } {
    return {
      admin: this.admin(region),
      databaseUrl: (physical) => {
        const url = new URL(this.config.dataPlaneUrl(region));
        url.pathname = `/${assertPhysicalName(physical)}`;
        return url.toString();
      },
    };
  }

  private admin(region: Region): Pool {
    const url = this.config.dataPlaneUrl(region);
    let pool = this.pools.get(url);
    if (!pool) {
      pool = new Pool({
        connectionString: url,
        max: 4,
        idleTimeoutMillis: 10000,
        connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
        application_name: 'control-plane',
      });
      // An idle client that loses its connection must not take the process down.
      pool.on('error', (err) => this.logger.warn({ region, err: err.message }, 'data-plane connection lost'));
      this.pools.set(url, pool);
    }
    return pool;
  }

  private async withAdmin<T>(region: Region, work: (db: PoolClient) => Promise<T>): Promise<T> {
    const db = await this.admin(region).connect();
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
  private async withDatabase<T>(region: Region, physical: string, work: (db: Client) => Promise<T>): Promise<T> {
    const url = new URL(this.config.dataPlaneUrl(region));
    url.pathname = `/${assertPhysicalName(physical)}`;
    const db = new Client({
      connectionString: url.toString(),
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      application_name: 'control-plane',
    });
    db.on('error', () => undefined);
    await db.connect();
    try {
      return await work(db);
    } finally {
      await db.end().catch(() => undefined);
    }
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
