import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { MetadataTransactions } from '../database/metadata-transactions';
import { ErrorCode } from '../common/errors/error-code';
import { DataPlane } from '../data-plane/data-plane.service';
import { UnansweringServers } from '../data-plane/unanswering-servers';
import { JobDispatcher } from '../queues/job-dispatcher';
import { Reconciler } from '../queues/reconciler';
import { DatabaseFinalizers } from './database-finalizers';
import { type DatabasePlacement, provisionJobId } from './database-jobs';
import { DatabasesRepository } from './databases.repository';
import { DatabaseEntity, DatabaseStatus } from './database.entity';
import { sweepUsableDatabases } from './usable-databases-sweep';
import { PooledDatabasesRepository } from './pooled-databases.repository';
import { WarmPool } from './warm-pool.service';
import { messageOf } from '../common/errors/message-of';

const SWEEP_BATCH = 500;

/** The data-plane lock under which one database's build and finalization take turns. */
const lockKey = (where: Pick<DatabaseEntity, 'physicalName'>) => `database:${where.physicalName}`;

/**
 * Whether the row is owed a build: REQUESTED or BUILT, and neither finalized nor due to be. A database
 * deleted before it was built is still built: it works until its deletion is due (rule 1); once due,
 * its finalization is all it gets.
 */
const unbuilt = (r: DatabaseEntity | null): r is DatabaseEntity =>
  !!r &&
  !r.finalized &&
  (!r.deleted || (!!r.deletionDueAt && r.deletionDueAt.getTime() > Date.now())) &&
  (r.status === DatabaseStatus.Requested || r.status === DatabaseStatus.Built);

/** What a lost server took with it (DatabaseLifecycle.writeOffServer). */
export interface LostDatabases {
  databases: { id: string; name: string; workspaceId: string }[];
  /** Warm-pool entries. */
  pooled: number;
}

/** The server a database lives on (every row has one once boot has attached rows from before the fleet). */
export function serverOf(row: Pick<DatabaseEntity, 'id' | 'serverId'>): string {
  if (!row.serverId) throw new Error(`database ${row.id} is not placed on a data-plane server`);
  return row.serverId;
}

/** Where a database is: its server and physical name. */
export function placementOf(row: DatabaseEntity): DatabasePlacement {
  return { serverId: serverOf(row), physicalName: row.physicalName };
}

/**
 * How a run went. `failedBuild`: the build threw; what it half-made is removed, and the failure
 * recorded, once its turn under the lock has ended (see recordFailedBuild). `row` is the row as the
 * build read it under the lock.
 */
type Outcome = { ok: true } | { ok: false; error: unknown; failedBuild?: { row: DatabaseEntity; attempt: number } };

/**
 * Moves databases through their life on the data plane: REQUESTED -> (build, verify) -> READY,
 * and deleted -> (grace period) -> finalized. A build and a finalization of one database take
 * turns under its advisory lock on its data-plane server, so they never overlap, and each step is
 * idempotent, so jobs that run twice or late change nothing the second time.
 */
@Injectable()
export class DatabaseLifecycle implements OnModuleInit {
  private readonly logger = new Logger(DatabaseLifecycle.name);

  constructor(
    private readonly txHost: MetadataTransactions,
    private readonly databases: DatabasesRepository,
    private readonly dataPlane: DataPlane,
    private readonly jobs: JobDispatcher,
    private readonly reconciler: Reconciler,
    private readonly finalizers: DatabaseFinalizers,
    private readonly pool: WarmPool,
    private readonly pooled: PooledDatabasesRepository,
  ) {}

  onModuleInit(): void {
    this.reconciler.register('databases', () => this.sweep());
  }

  /**
   * Builds the physical database and hardens it (-> BUILT), then verifies it (-> READY). A failure
   * removes whatever was half-made (never what another run has made READY meanwhile: see
   * removeHalfMade), records the error on the row (status unchanged) and throws, so the job
   * retries with backoff; the sweep re-enqueues it after the attempts run out.
   *
   * No metadata transaction or row lock is open while the data plane works (habit 14): runs on one
   * database take turns under an advisory lock on its data-plane server (a run that finds it taken
   * leaves the work to the holder), and each outcome is recorded by a conditional update that
   * finds nothing to change when the row moved on meanwhile (already further along: READY, made so by
   * another run after this one lost its lock session with its connection). A deleted database is
   * still built and made READY: it works until its deletion is due, and finalization waits for this lock.
   */
  async provision(databaseId: string, placement?: DatabasePlacement): Promise<void> {
    let where = placement;
    if (!where) {
      const row = await this.databases.readById(databaseId);
      if (!unbuilt(row)) return;
      where = placementOf(row);
    }
    let outcome: Outcome | 'misplaced' | undefined;
    try {
      outcome = await this.dataPlane.exclusively(
        where.serverId,
        lockKey(where),
        async () => {
          // Read under the lock: another run may have built or finalized it meanwhile.
          const current = await this.databases.readById(databaseId);
          if (!unbuilt(current)) return { ok: true };
          const actual = placementOf(current);
          if (actual.serverId !== where.serverId || actual.physicalName !== where.physicalName) return 'misplaced';
          return this.build(current);
        },
        { job: true },
      );
    } catch (error) {
      // The server could not even be reached for the lock: recorded like a failed build. Unless the
      // row is owed no build any more (built by another run, or finalized: its server written off
      // as lost, whose jobs would otherwise fail every attempt against a server no longer known).
      const row = await this.databases.readById(databaseId);
      if (!unbuilt(row)) return;
      await this.databases.recordAttemptFailure(row.id, messageOf(error), row.provisionAttempts + 1, row.status);
      this.logger.error(
        { errorCode: ErrorCode.DbCreationFailure, databaseId, serverId: where.serverId, err: messageOf(error) },
        'data-plane server unreachable; will retry',
      );
      throw error;
    }
    // A job whose placement is not the row's (never written so): the row decides.
    if (outcome === 'misplaced') return this.provision(databaseId);
    if (outcome && !outcome.ok) {
      const failed = outcome.failedBuild;
      if (failed) await this.recordFailedBuild(failed.row, failed.attempt, outcome.error);
      throw outcome.error;
    }
  }

  /**
   * Builds the database (idempotent: a row left BUILT by an earlier version is built again) and
   * records the outcome in one write: READY when the build verified (see
   * DataPlane.buildDatabase), back to REQUESTED with the error otherwise. A crash between the
   * build and that write leaves the row as it was, and the next run builds again. A build that
   * throws is cleaned up and recorded by the caller once this turn has ended (recordFailedBuild).
   */
  private async build(row: DatabaseEntity): Promise<Outcome> {
    const attempt = row.provisionAttempts + 1;
    let hardened: boolean;
    try {
      hardened = await this.dataPlane.buildDatabase(serverOf(row), row.physicalName, { sharded: row.sharded });
    } catch (error) {
      return { ok: false, error, failedBuild: { row, attempt } };
    }
    if (hardened) {
      if (!(await this.databases.markReady(row.id, attempt))) await this.dropIfFinalized(row);
      return { ok: true };
    }
    const error = new Error('the built database failed verification (missing, wrong owner or open to PUBLIC)');
    await this.databases.markUnverified(row.id, error.message, attempt);
    this.logger.error(
      { errorCode: ErrorCode.DbCreationFailure, databaseId: row.id, region: row.region, err: error.message },
      'database failed verification; rebuilding',
    );
    return { ok: false, error };
  }

  /**
   * After a verified build found its row moved on: when the row was finalized meanwhile (this run's
   * turn ended without it knowing, its lock session lost with its connection, and a finalization
   * took the lock before the database existed), what the build made is dropped, or nothing would
   * ever drop it (every sweep passes finalized rows by). Otherwise another run made it READY.
   */
  private async dropIfFinalized(row: DatabaseEntity): Promise<void> {
    if (!(await this.databases.readById(row.id))?.finalized) return;
    await this.dataPlane.dropDatabase(serverOf(row), row.physicalName);
    this.logger.warn(
      { databaseId: row.id },
      'database built after its finalization (its build lost its turn): dropped',
    );
  }

  /**
   * After a build threw: removes what it half-made (removeHalfMade), then records the error on the
   * row, only while the row still has the status the build read (a row another run has made READY
   * meanwhile keeps no error).
   */
  private async recordFailedBuild(row: DatabaseEntity, attempt: number, error: unknown): Promise<void> {
    await this.removeHalfMade(row);
    await this.databases.recordAttemptFailure(row.id, messageOf(error), attempt, row.status);
    this.logger.error(
      {
        errorCode: ErrorCode.DbCreationFailure,
        databaseId: row.id,
        region: row.region,
        serverId: row.serverId,
        attempt,
        err: messageOf(error),
      },
      'database could not be built; will retry',
    );
  }

  /**
   * Drops what a failed build may have half-made, in a turn of its own under the database's lock,
   * unless the row says another run has made the database READY. The failed build's own turn may
   * have ended without it knowing (its lock session lost with its connection): another run may then
   * have built the database, made it READY and issued credentials, and dropping would leave a READY
   * row with no database. When another run holds the lock now, it is building: its build is
   * idempotent and finishes what was half-made (or removes it if it fails), so nothing is dropped.
   */
  private async removeHalfMade(row: DatabaseEntity): Promise<void> {
    try {
      await this.dataPlane.exclusively(
        serverOf(row),
        lockKey(row),
        async () => {
          const current = await this.databases.readById(row.id);
          if (current && !current.finalized && current.status === DatabaseStatus.Ready) return;
          await this.dataPlane.dropDatabase(serverOf(row), row.physicalName);
        },
        { job: true },
      );
    } catch (cleanup) {
      this.logger.error({ databaseId: row.id, err: messageOf(cleanup) }, 'could not remove a half-made database');
    }
  }

  /**
   * Finalizes a deletion whose grace period has passed: terminates its sessions, drops the physical
   * database, its credential roles and its owner role, lets other modules finish (credentials,
   * compute), and marks the row finalized; the row stays as a tombstone for billing history.
   * Returns false when there was nothing (yet) to do. Idempotent. The drop runs under the
   * database's data-plane lock (see provision) with no metadata transaction open; the bookkeeping
   * follows in one short transaction with the row locked. `job`: run by its job (see
   * DataPlane.exclusively).
   */
  async finalize(databaseId: string, now = new Date(), options: { job?: boolean } = {}): Promise<boolean> {
    const due = (row: DatabaseEntity | null): row is DatabaseEntity =>
      !!row?.deleted && !row.finalized && !(row.deletionDueAt && row.deletionDueAt.getTime() > now.getTime());
    const row = await this.databases.findById(databaseId);
    if (!due(row)) return false;
    const done = await this.dataPlane.exclusively(
      serverOf(row),
      lockKey(row),
      async () => {
        if (!due(await this.databases.findById(databaseId))) return false;
        await this.dataPlane.dropDatabase(serverOf(row), row.physicalName);
        return this.locked(databaseId, async (current) => {
          if (!due(current)) return false;
          await this.finalizers.runAll(current);
          await this.databases.markFinalized(current.id, new Date());
          return true;
        });
      },
      options,
    );
    if (done === undefined) {
      throw new Error(`database ${databaseId} is being worked on by another run; finalization will retry`);
    }
    if (done) this.logger.log({ databaseId }, 'database deletion finalized');
    return done ?? false;
  }

  /**
   * Writes off what lived on a server lost for good (`server:remove --lost`), in the removal's
   * transaction, which the context carries: every database on it not yet finalized is deleted as of
   * now (one its customer deleted keeps that moment; its billing stops now at the latest) and
   * finalized without a drop (there is nothing left to drop), other modules finishing as at a
   * finalization (credentials dropped, compute ended); its warm-pool entries are deleted. What was
   * lost, for the operator to tell those customers.
   */
  async writeOffServer(serverId: string): Promise<LostDatabases> {
    this.txHost.required('writing off a lost server');
    const now = new Date();
    const rows = await this.databases.lockUnfinalizedOn(serverId);
    for (const row of rows) await this.finalizers.runAll(row);
    await this.databases.writeOff(
      rows.map((r) => r.id),
      now,
    );
    const pooled = await this.pooled.deleteAllOn(serverId);
    const databases = rows.map(({ id, name, workspaceId }) => ({ id, name, workspaceId }));
    this.logger.warn({ serverId, databases, pooled }, 'databases of a lost data-plane server written off');
    return { databases, pooled };
  }

  /**
   * One reconcile pass: re-enqueues builds that are not done (their job may be lost or out of
   * attempts; taken from the servers in turn, so builds stuck on one server never keep another's
   * out), finalizes overdue deletions whose job was lost, gives usable databases built before the
   * holder role to it (holdEarlierDatabases), and tops up the warm pool.
   */
  async sweep(now = new Date()): Promise<void> {
    for (const id of await this.databases.unbuiltInTurnByServer(SWEEP_BATCH)) {
      await this.jobs.redispatch('ProvisionDatabase', { databaseId: id }, { jobId: provisionJobId(id) });
    }
    await this.finalizeOverdue(now);
    await this.holdEarlierDatabases();
    await this.pool.requestRefillEverywhere();
  }

  /**
   * Usable databases (READY, not finalized) that the holder role does not own were built by a
   * release that gave each database to its owner role, whose credentials could then ALTER it (lift
   * its CONNECTION LIMIT, close it): each is given to the holder role as builds do now
   * (DataPlane.holdDatabase), under its build lock (skipped while a build or finalization holds it).
   * Per server one catalog read; a server that does not answer waits for the next pass.
   */
  private async holdEarlierDatabases(): Promise<void> {
    await sweepUsableDatabases(
      this.databases,
      this.logger,
      'database ownership checks',
      SWEEP_BATCH,
      async (serverId, batch) => {
        const earlier = await this.dataPlane.databasesNotHeld(
          serverId,
          batch.map((d) => d.physical_name),
        );
        for (const physicalName of earlier) {
          await this.dataPlane.exclusively(serverId, lockKey({ physicalName }), async () => {
            await this.dataPlane.holdDatabase(serverId, physicalName);
            this.logger.log({ serverId, physicalName }, 'database given to the holder role');
          });
        }
      },
    );
  }

  /**
   * Finalizes overdue deletions here and now (they work with Redis away too), the batch taken from
   * the servers in turn so one server's backlog never crowds out another's. A server that does not
   * answer costs the pass one wait for it (the connect timeout, or our statement timeouts): its
   * other deletions are left to the next pass instead of each waiting it out in turn, which held up
   * every later reconcile task for minutes.
   */
  private async finalizeOverdue(now: Date): Promise<void> {
    const unanswering = new UnansweringServers(this.logger, 'deletions');
    for (const { id, serverId } of await this.databases.overdueInTurnByServer(now, SWEEP_BATCH)) {
      if (unanswering.skip(serverId)) continue;
      try {
        await this.finalize(id, now);
      } catch (err) {
        unanswering.note(serverId, err);
        this.logger.error(
          { errorCode: ErrorCode.DbDeletionFailure, databaseId: id, serverId, err: messageOf(err) },
          'deletion could not be finalized; will retry',
        );
      }
    }
    unanswering.report();
  }

  /**
   * Runs `work` with the database row locked (FOR UPDATE) in a transaction the context carries (so
   * the finalizers of other modules join it); undefined if there is no row.
   */
  private locked<T>(id: string, work: (row: DatabaseEntity) => Promise<T>): Promise<T | undefined> {
    return this.txHost.withTransaction(async () => {
      const row = await this.databases.lock(id, 'pessimistic_write');
      return row ? work(row) : undefined;
    });
  }
}
