import { MetadataTransactions } from '../database/metadata-transactions';
import { HttpStatus, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { OUTAGE_RETRY_AFTER_SECONDS } from '../common/errors/dependency-outage';
import { SecretBox } from '../common/crypto/secret-box';
import { randomToken } from '../common/crypto/tokens';
import { PlanLimits } from '../subscriptions/plan-limits.service';
import { DataPlane, DataPlaneError } from '../data-plane/data-plane.service';
import { UnansweringServers } from '../data-plane/unanswering-servers';
import { scramSha256Verifier } from '../data-plane/scram';
import { DatabaseFinalizers } from '../databases/database-finalizers';
import { DatabaseEntity, DatabaseStatus } from '../databases/database.entity';
import { DatabasesService } from '../databases/databases.service';
import { JobDispatcher } from '../queues/job-dispatcher';
import { Reconciler } from '../queues/reconciler';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { expireJobId } from './credential-jobs';
import type { CredentialEntity, CredentialGroup } from './credential.entity';
import { CredentialsRepository } from './credentials.repository';
import { CreateCredentialResponse, CredentialResponse } from './credential.response';
import type { CredentialGroupQueryDto } from './dto/credential-group-query.dto';
import type { RotateCredentialsDto } from './dto/rotate-credentials.dto';
import { messageOf } from '../common/errors/message-of';
import { isUuid } from '../common/http/uuid';
import { serverOf } from '../databases/database-lifecycle.service';
import { dataPlaneUnavailable } from '../data-plane/unavailable';

const SWEEP_BATCH = 500;
/** 32 random bytes, base64url: 43 characters, 256 bits. */
const PASSWORD_BYTES = 32;

const notReady = (database: DatabaseEntity) =>
  new ApiException(
    ErrorCode.DbStatusFailure,
    `Database ${database.name} is not ready yet (status ${database.status}); credentials can be created once it is READY`,
  );

/** The group `tenantId` and `internal` name: no tenant and not internal when they are omitted. */
const groupOf = (query: CredentialGroupQueryDto): CredentialGroup => ({
  tenant: query.tenantId ?? null,
  internal: query.internal ?? false,
});

const inGroup = (credential: CredentialEntity, group: CredentialGroup): boolean =>
  credential.tenant === group.tenant && credential.internal === group.internal;

const databaseGone = () => new ApiException(ErrorCode.EntityNotFound, 'The database no longer exists');
/** PostgreSQL: invalid_catalog_name (the database does not exist). */
const DATABASE_MISSING = '3D000';
/** How long a DELETE that failed while its database's finalization may be under way waits for it to finish. */
const FINALIZATION_WAIT_MS = 2000;

/** Whether the database is deleted and its grace period over (its finalization may be under way). */
function isFinalizationDue(row: Pick<DatabaseEntity, 'deleted' | 'deletionDueAt'>): boolean {
  return !!row.deleted && (!row.deletionDueAt || row.deletionDueAt.getTime() <= Date.now());
}

/**
 * A create whose role took longer than the sweep waits for a pending one (pendingAbandonMs): its
 * row was given up, and the role it made is dropped by the sweep. The server was too slow to
 * answer: 503, as for one that does not answer (habit 17).
 */
const givenUp = () =>
  new ApiException(
    ErrorCode.CredentialCreationFailure,
    'The credential could not be created in time (the database server was slow to answer) and was given up; nothing usable was left behind, retry later',
    { status: HttpStatus.SERVICE_UNAVAILABLE, headers: { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) } },
  );

interface Issued<T> {
  credential: CredentialEntity;
  database: DatabaseEntity;
  password: string;
  extra: T;
}

/**
 * Credentials are PostgreSQL login roles on the database's server; the credential id is the role
 * name. The password is generated here, shown once, reaches PostgreSQL only as a SCRAM verifier
 * and is stored only sealed (AES-256-GCM). Expiry (rotation) is a row (`expiresAt`) written with
 * the rotation, the role's `VALID UNTIL` (so PostgreSQL refuses the password on time by itself) and
 * a delayed job that drops the role; a sweep drops any whose job was lost.
 */
@Injectable()
export class CredentialsService implements OnModuleInit {
  private readonly logger = new Logger(CredentialsService.name);

  constructor(
    private readonly txHost: MetadataTransactions,
    private readonly credentials: CredentialsRepository,
    private readonly databases: DatabasesService,
    private readonly dataPlane: DataPlane,
    private readonly box: SecretBox,
    private readonly jobs: JobDispatcher,
    private readonly reconciler: Reconciler,
    private readonly finalizers: DatabaseFinalizers,
    private readonly plans: PlanLimits,
  ) {}

  onModuleInit(): void {
    this.reconciler.register('credentials', () => this.sweep());
    // Finalization has dropped the database and every member of its owner role already.
    // It runs in the finalization's transaction, which the context carries.
    this.finalizers.register('credentials', (database) =>
      this.credentials.markDroppedOfDatabase(database.id, new Date()),
    );
  }

  /**
   * Issues a credential of the group `query` names (its tenant and whether it is internal are
   * recorded; nothing on the data plane depends on them). `prefetched`: the database as
   * authentication read it, if it did (see PrefetchedDatabase).
   */
  async create(
    workspace: WorkspaceEntity,
    databaseName: string,
    callerId: string | null,
    query: CredentialGroupQueryDto,
    prefetched?: DatabaseEntity | null,
  ): Promise<CreateCredentialResponse> {
    const database = await this.databases.findOperable(workspace, databaseName, prefetched);
    const issued = await this.issue(database, callerId, groupOf(query), { withinPlanOf: workspace.id });
    return this.created(issued, workspace);
  }

  /**
   * An instant database's one credential (see InstantDatabasesService): no tenant, not internal, and
   * outside any plan, as the database itself is made: its caller has no workspace, and the holding
   * workspace's FREE plan is no plan of theirs.
   */
  async createInstant(holder: WorkspaceEntity, databaseName: string): Promise<CreateCredentialResponse> {
    const database = await this.databases.findOperable(holder, databaseName);
    return this.created(await this.issue(database, null, groupOf({}), {}), holder);
  }

  /**
   * The database's credentials that still exist, oldest first; never a password. The internal ones
   * only with `internal=true` (the others otherwise); with `tenantId` only that tenant's, without it
   * those of every tenant and of none.
   */
  async list(
    workspace: WorkspaceEntity,
    databaseName: string,
    query: CredentialGroupQueryDto,
  ): Promise<CredentialResponse[]> {
    const database = await this.databases.findOperable(workspace, databaseName);
    const rows = await this.credentials.listUsable(database.id, {
      internal: query.internal ?? false,
      tenant: query.tenantId,
    });
    const summary = this.databases.summarize(database, workspace);
    return rows.map((c) => ({
      id: c.id,
      database: summary,
      tenant: c.tenant ?? undefined,
      internal: c.internal,
      created: c.created,
      expires: c.expiresAt ?? undefined,
    }));
  }

  /**
   * Terminates the credential's sessions and drops its role (what it owned goes to the owner role).
   * The wish is committed before the data plane is touched (habit 14): the row expires now (an
   * earlier expiry is kept), so whatever fails or crashes after that, the overdue sweep drops the
   * role and marks the row dropped, as it does for a rotation's expiry. Until then the credential is
   * listed with its expiry passed, counts against the plan and can be deleted again. A delete that
   * meets its database's finalization answers 404, as one after it would.
   */
  async delete(workspace: WorkspaceEntity, databaseName: string, credentialId: string): Promise<void> {
    const database = await this.databases.findOperable(workspace, databaseName);
    const credential = isUuid(credentialId) ? await this.credentials.findUsable(credentialId, database.id) : null;
    if (!credential) {
      throw new ApiException(ErrorCode.EntityNotFound, `No credential ${credentialId} on database ${databaseName}`);
    }
    await this.credentials.expireNoLaterThan(credential.id, new Date());
    try {
      await this.dataPlane.dropLoginRole(serverOf(database), database.physicalName, credential.id);
    } catch (err) {
      // The database dropped by its finalization meanwhile (its DROP DATABASE ended our session in
      // it, or it was gone by the time we connected): the delete comes second, as if serial. The
      // finalization drops the role with the database and marks the credential dropped. A server
      // that does not answer is an outage (503) even when the deletion is due: the role still logs in.
      if (await this.droppedByFinalization(database.id, err)) throw databaseGone();
      this.logger.error(
        { errorCode: ErrorCode.CredentialPropagationFailure, credentialId, err: messageOf(err) },
        'credential role could not be dropped; the sweep will retry',
      );
      throw (
        dataPlaneUnavailable(
          ErrorCode.CredentialPropagationFailure,
          err,
          'The credential could not be removed yet',
          'its expiry is recorded and it will be removed once the server can',
        ) ??
        new ApiException(
          ErrorCode.CredentialPropagationFailure,
          'The credential could not be removed from the database server yet; it will be removed shortly',
        )
      );
    }
    try {
      await this.credentials.markDropped(credential.id, new Date());
    } catch (err) {
      // The role is gone and the wish is recorded: the delete is done; the sweep writes it down.
      this.logger.error(
        { credentialId, err: messageOf(err) },
        'credential role dropped but not yet marked dropped; the sweep will',
      );
    }
  }

  /**
   * Issues a new credential of the group `query` names (its tenant, or none, and whether it is
   * internal) and schedules every credential of that group that existed before the call to expire
   * after the delay (keeping an earlier expiry a previous rotation set); other groups' credentials
   * are not touched. The bookkeeping runs when the new role exists, with the database row locked
   * exclusively: rotations of one database (of every group) take turns there, and credentials still
   * pending are not "previous", so a later rotation never has its new credential expired by an
   * earlier one.
   *
   * The plan's credentials per database bound what stays working besides the new credential, over
   * the whole database (see assertRotationWithinPlan): with a delay the group's previous credentials
   * keep working until then, next to the other groups'.
   */
  async rotate(
    workspace: WorkspaceEntity,
    databaseName: string,
    dto: RotateCredentialsDto,
    query: CredentialGroupQueryDto,
    callerId: string,
  ): Promise<CreateCredentialResponse> {
    const database = await this.databases.findOperable(workspace, databaseName);
    const group = groupOf(query);
    const delayHours = dto.delayOldSecretsExpirationHours;
    // Refused here already, before a role is made, when the working credentials are too many now;
    // decided for good in the bookkeeping, where rotations take turns.
    await this.assertRotationWithinPlan(workspace.id, delayHours, () =>
      this.credentials.countWorkingAt(database.id, new Date(), group),
    );
    const issued = await this.issue(database, callerId, group, {
      extra: async (fresh) => {
        const now = Date.now();
        const expireAt = new Date(now + delayHours * 3600 * 1000);
        // Creates still making their roles count as working (they will be, once confirmed with no
        // check after their intent's), or rotations meanwhile would pass the plan by as many; other
        // rotations' do not (each is decided in its own turn here). Neither is previous (not replaced).
        const others = await this.credentials.liveExcept(database.id, fresh.id);
        const counted = others.filter((c) => !(c.pending && c.issuedByRotation));
        const previous = others.filter((c) => !c.pending && inGroup(c, group));
        const working = (list: CredentialEntity[]) =>
          list.filter((c) => !c.expiresAt || c.expiresAt.getTime() > now).length;
        await this.assertRotationWithinPlan(workspace.id, delayHours, () =>
          Promise.resolve({ all: working(counted), inGroup: working(previous) }),
        );
        const rotation = await this.credentials.saveRotation({
          databaseId: database.id,
          newCredentialId: fresh.id,
          reason: dto.reason ?? '',
          delayHours,
          oldExpireAt: expireAt,
          requestedBy: callerId,
        });
        // Those expiring no later stay so (decided on the rows as committed: a delete may have
        // recorded its wish since they were read); every other one works until its new expiry.
        const rescheduled: CredentialEntity[] = [];
        for (const old of previous) {
          if (!(await this.credentials.setRotationExpiry(old.id, expireAt, rotation.id))) continue;
          old.expiresAt = expireAt;
          old.expiredByRotationId = rotation.id;
          rescheduled.push(old);
        }
        return rescheduled;
      },
    });
    try {
      for (const old of issued.extra ?? []) await this.scheduleExpiry(issued.database, old);
    } catch (err) {
      // The rotation is committed and the new role made: its password is the caller's whatever this
      // costs. The sweep sets VALID UNTIL and enqueues the expiry of every credential still waiting.
      this.logger.warn(
        { databaseId: issued.database.id, err: messageOf(err) },
        "the previous credentials' expiry is left to the sweep",
      );
    }
    return this.created(issued, workspace);
  }

  /**
   * Drops a credential whose expiry has passed (the expiry job; also the sweep). Harmless when it
   * runs late, twice, or early (then it does nothing). Returns whether it dropped the role now.
   */
  async expire(credentialId: string, now = new Date()): Promise<boolean> {
    const credential = await this.credentials.findWithDatabase(credentialId);
    if (!credential?.database || credential.dropped || !credential.expiresAt) return false;
    if (credential.expiresAt.getTime() > now.getTime()) return false;
    await this.dataPlane.dropLoginRole(serverOf(credential.database), credential.database.physicalName, credential.id);
    const affected = await this.credentials.markDropped(credential.id, new Date());
    if (affected) this.logger.log({ credentialId }, 'expired credential dropped');
    return affected > 0;
  }

  /**
   * One reconcile pass: drops every credential whose expiry has passed (its job may be lost), and
   * for those still waiting re-enqueues their job (duplicates collapse) and re-asserts `VALID UNTIL`
   * where the server does not have it (see reassertWaiting); then drops orphan credential roles
   * (see dropOrphanRoles).
   *
   * A server that does not answer costs the pass one wait for it (the connect timeout, or our
   * statement timeouts): once one of its calls fails so, the pass makes no more calls there and
   * leaves that server's work to the next pass (jobs are still enqueued), instead of each credential
   * waiting it out in turn, which held up every later reconcile task for minutes.
   */
  async sweep(now = new Date()): Promise<void> {
    const unanswering = new UnansweringServers(this.logger, 'credential work');
    await this.sweepExpiries(now, unanswering);
    await this.dropOrphanRoles(unanswering);
    unanswering.report();
  }

  /**
   * Drops credential roles nothing accounts for: on each server, the UUID-named members of the
   * owner roles of this deployment's live (not finalized) databases that have no `credentials` row,
   * or whose row is marked dropped. Nothing else is ever touched: not roles outside those owner
   * roles, not the owner roles (their names are not UUIDs), not roles whose row is not dropped (a
   * pending one included).
   *
   * A create commits its (pending) row before it makes the role, so a role without a row was never
   * made by a create in flight: no lock is needed to tell. (Such roles come from before that order,
   * or from someone creating roles by hand inside an owner role.) A row is marked dropped only
   * after its role was dropped, and nothing makes that role again but a create given up while its
   * role was still in the making (see pendingAbandonMs): such a role is left over, and nobody can
   * log in with it usefully (its create was refused). Returns how many were dropped. Servers found
   * not answering are skipped (see sweep).
   */
  private async dropOrphanRoles(unanswering: UnansweringServers): Promise<number> {
    // Every live database of the fleet, every 30 s: two columns as raw rows (no entity hydration).
    const live = await this.databases.livePlacements();
    let dropped = 0;
    for (const [serverId, databases] of Map.groupBy(live, (d) => d.server_id)) {
      if (unanswering.skip(serverId)) continue;
      let members: { physical: string; role: string }[];
      try {
        members = await this.dataPlane.credentialRoleMembers(
          serverId,
          databases.map((d) => d.physical_name),
        );
      } catch (err) {
        unanswering.note(serverId, err);
        this.logger.warn({ serverId, err: messageOf(err) }, 'could not look for orphan credential roles');
        continue;
      }
      if (members.length === 0) continue;
      const known = await this.credentials.notDroppedIds(members.map((m) => m.role));
      for (const { physical, role } of members) {
        if (known.has(role) || unanswering.skip(serverId)) continue;
        try {
          await this.dataPlane.dropLoginRole(serverId, physical, role);
          this.logger.warn(
            { serverId, role },
            'orphan credential role dropped (no credential, or a dropped one, accounts for it)',
          );
          dropped += 1;
        } catch (err) {
          unanswering.note(serverId, err);
          this.logger.error({ serverId, role, err: messageOf(err) }, 'orphan credential role could not be dropped');
        }
      }
    }
    return dropped;
  }

  /**
   * How long a create may stay pending before the sweep gives it up: as long as its role can still
   * be in the making while the server answers (DataPlane.createLoginRoleSettledMs, from the same
   * timeouts; its session is asked for before its row is written, so the row is younger). A create
   * given up sooner could make its role after the sweep dropped none and marked the row dropped;
   * should a stalled server still do so later, dropOrphanRoles drops that role.
   */
  get pendingAbandonMs(): number {
    return this.dataPlane.createLoginRoleSettledMs;
  }

  /** The sweep's expiry work; servers found not answering get no more calls (see sweep). */
  private async sweepExpiries(now: Date, unanswering: UnansweringServers): Promise<void> {
    // Creates cut short by a crash between their intent and their outcome: given up (see issue).
    await this.credentials.abandonPendingCreatedBefore(new Date(now.getTime() - this.pendingAbandonMs), now);
    // Taken from the servers in turn: one server's backlog never crowds out another's.
    for (const { id, serverId } of await this.credentials.overdueInTurnByServer(now, SWEEP_BATCH)) {
      if (unanswering.skip(serverId)) continue;
      try {
        await this.expire(id, now);
      } catch (err) {
        unanswering.note(serverId, err);
        this.logger.error({ credentialId: id, err: messageOf(err) }, 'expired credential could not be dropped');
      }
    }
    await this.reassertWaiting(await this.credentials.waitingWithDatabase(now, SWEEP_BATCH), unanswering);
  }

  /**
   * For credentials still waiting for their expiry: re-enqueues each one's job (a lost one comes
   * back; duplicates collapse), and sets `VALID UNTIL` again only on the roles that do not carry
   * the recorded moment: a rotation whose call to the server failed (it did not answer) or never
   * came (a crash after its bookkeeping), or lost a race. That is what keeps the promise that
   * PostgreSQL refuses the role on time even if no job runs; the roles are read first, one query
   * per server, because rewriting every waiting role at every pass wrote the catalog of customers'
   * servers (and took the role's turn with its drops) for nothing. Servers found not answering
   * are skipped (see sweep).
   */
  private async reassertWaiting(waiting: CredentialEntity[], unanswering: UnansweringServers): Promise<void> {
    const expiring = waiting.filter((c) => c.database && c.expiresAt);
    for (const [serverId, credentials] of Map.groupBy(expiring, (c) => serverOf(c.database!))) {
      let wrong = new Set<string>();
      if (!unanswering.skip(serverId)) {
        try {
          wrong = await this.dataPlane.rolesNotValidUntil(
            serverId,
            credentials.map((c) => ({ role: c.id, at: c.expiresAt! })),
          );
        } catch (err) {
          unanswering.note(serverId, err);
          this.logger.warn({ serverId, err: messageOf(err) }, 'could not read the VALID UNTIL of waiting credentials');
        }
      }
      for (const credential of credentials) {
        if (wrong.has(credential.id)) await this.scheduleExpiry(credential.database!, credential, unanswering);
        else await this.enqueueExpiry(credential.id, credential.expiresAt!);
      }
    }
  }

  /**
   * Refuses a credential beyond the plan's number per database. The caller holds the database row
   * FOR NO KEY UPDATE, so creates of one database take turns here.
   */
  private async assertRoomInPlan(workspaceId: string, databaseId: string): Promise<void> {
    await this.plans.assertRoomFor(workspaceId, 'credentials', () => this.credentials.countLive(databaseId));
  }

  /**
   * Refuses a rotation that would leave more credentials of the database working besides the one it
   * issues than the plan allows per database, so at most that number plus one work at once whatever
   * the groups. `working` counts the usable credentials still working now (`all`), and those of the
   * rotated group (`inGroup`). With a delay, all of them stay working (the group's in their grace
   * window). With a delay of 0 the group's stop at once: a rotation that replaces at least one
   * working credential adds none and always passes (a leaked credential can always be rotated);
   * one of a group with none working adds its credential next to the other groups' ones.
   */
  private async assertRotationWithinPlan(
    workspaceId: string,
    delayHours: number,
    working: () => Promise<{ all: number; inGroup: number }>,
  ): Promise<void> {
    await this.plans.assertRotationWithinPlan(workspaceId, async () => {
      const { all, inGroup } = await working();
      return delayHours === 0 && inGroup > 0 ? 0 : all;
    });
  }

  /**
   * Issues a credential without holding anything in the metadata database while the data plane
   * works (habit 14): (1) a short transaction, holding the database row lock, checks the database
   * and records the intent (a `pending` row with the sealed password); (2) the role is made on the
   * database's server, with that server's timeouts; (3) the row is confirmed, with `extra` (a
   * rotation's bookkeeping) in the same short transaction, or by one conditional update when there
   * is none. When (2) fails, the row gets an expiry at once, so the expiry job and sweep drop
   * whatever role may exist, and the caller gets 503 (the server did not answer) or 500; when a
   * crash cuts in, the sweep abandons the pending row the same way. A pending row is never listed,
   * so nobody holds a password of a half-made credential.
   *
   * The session to the database (a connection with its SCRAM handshake) and the SCRAM verifier are
   * made while (1) runs: neither changes anything, and (2) starts only once (1) has committed.
   */
  private async issue<T>(
    database: DatabaseEntity,
    callerId: string | null,
    group: CredentialGroup,
    options: {
      withinPlanOf?: string;
      /** A rotation's bookkeeping: runs where the credential is confirmed (see confirmWith). */
      extra?: (fresh: CredentialEntity) => Promise<T>;
    } = {},
  ): Promise<Issued<T | undefined>> {
    if (database.status !== DatabaseStatus.Ready) throw notReady(database);
    const databaseId = database.id;
    // Over the plan already: refused before a session to the data plane is opened, so such requests,
    // however many at once, cost the server nothing (the check in (1) is the one that holds).
    if (options.withinPlanOf && this.plans.limits('credentials')) {
      await this.assertRoomInPlan(options.withinPlanOf, databaseId);
    }
    const id = randomUUID();
    const password = randomToken(PASSWORD_BYTES);
    const verifying = scramSha256Verifier(password);
    verifying.catch(() => undefined); // awaited below; (1) may fail first
    const session = this.dataPlane.openSession(serverOf(database), database.physicalName);
    let intent: { database: DatabaseEntity; credential: CredentialEntity };
    try {
      intent = await this.txHost.withTransaction(async () => {
        // Creates within the plan take turns on the row (they count, then insert); others share it.
        const row = await this.databases.lock(
          databaseId,
          options.withinPlanOf ? 'for_no_key_update' : 'pessimistic_read',
        );
        if (!row || row.finalized) {
          throw databaseGone();
        }
        if (row.status !== DatabaseStatus.Ready) throw notReady(row);
        if (options.withinPlanOf) await this.assertRoomInPlan(options.withinPlanOf, databaseId);
        const fresh = await this.credentials.insert({
          id,
          databaseId,
          passwordCiphertext: this.box.seal(password),
          internal: group.internal,
          pending: true,
          issuedByRotation: !!options.extra,
          tenant: group.tenant,
          createdBy: callerId,
          expiresAt: null,
          expiredByRotationId: null,
          dropped: null,
        });
        return { database: row, credential: fresh };
      });
    } catch (err) {
      session.close();
      throw err;
    }
    try {
      await this.dataPlane.createLoginRole(session, id, await verifying);
    } catch (err) {
      if (await this.finalizationDue(databaseId)) {
        // Deleted and being finalized meanwhile: the create comes second, as if serial. The role
        // cannot exist (its creation is one transaction that failed), so the intent goes too.
        await this.credentials.deletePending(id);
        throw databaseGone();
      }
      this.logger.error(
        { errorCode: ErrorCode.CredentialCreationFailure, databaseId, credentialId: id, err: messageOf(err) },
        'credential role could not be created; its intent is abandoned',
      );
      await this.abandon(intent.database, id);
      throw (
        dataPlaneUnavailable(ErrorCode.CredentialCreationFailure, err, 'The credential could not be created') ??
        new ApiException(
          ErrorCode.CredentialCreationFailure,
          'The credential could not be created on the database server; nothing was left behind, retry later',
        )
      );
    }
    try {
      const issued = options.extra
        ? await this.confirmWith(intent, options.extra)
        : { ...(await this.confirm(intent)), extra: undefined };
      return { ...issued, password };
    } catch (err) {
      await this.abandon(intent.database, id);
      throw err;
    }
  }

  /**
   * Confirms a pending credential in one statement: it becomes usable unless it was given up or
   * its database was finalized meanwhile (finalization locks the database row exclusively; this
   * statement takes it shared, so the two take turns as they would in transactions).
   */
  private async confirm(intent: {
    database: DatabaseEntity;
    credential: CredentialEntity;
  }): Promise<Omit<Issued<undefined>, 'password' | 'extra'>> {
    const confirmed = await this.credentials.confirmPendingIfDatabaseLive(intent.credential.id, intent.database.id);
    if (!confirmed) {
      const row = await this.databases.findRow(intent.database.id);
      throw !row || row.finalized ? databaseGone() : givenUp();
    }
    intent.credential.pending = false;
    return intent;
  }

  /**
   * Confirms a pending credential and runs `extra` in the same transaction with the database row
   * locked exclusively: rotations of one database take turns there.
   */
  private confirmWith<T>(
    intent: { database: DatabaseEntity; credential: CredentialEntity },
    extra: (fresh: CredentialEntity) => Promise<T>,
  ): Promise<Omit<Issued<T>, 'password'>> {
    const { credential } = intent;
    return this.txHost.withTransaction(async () => {
      const row = await this.databases.lock(intent.database.id, 'pessimistic_write');
      const affected = await this.credentials.confirmPending(credential.id);
      if (!row || row.finalized) throw databaseGone();
      if (!affected) throw givenUp();
      credential.pending = false;
      return { credential, database: row, extra: await extra(credential) };
    });
  }

  /**
   * Whether `err`, a data-plane call's failure in the database, came of its finalization: its
   * deletion is due (or it is finalized) and the server said the database is gone (3D000), or, for
   * any other failure, the row is finalized within moments, as a finalization under way is and one
   * held up by an outage is not. A session ended by DROP DATABASE … WITH (FORCE) (57P01, or only a
   * closed connection) is such a failure: a server shutting down ends it with the same code.
   */
  private async droppedByFinalization(databaseId: string, err: unknown): Promise<boolean> {
    let row = await this.databases.findRow(databaseId);
    if (!row || row.finalized) return true;
    if (!isFinalizationDue(row)) return false;
    const code = err instanceof DataPlaneError ? err.code : undefined;
    if (code === DATABASE_MISSING) return true;
    for (const deadline = Date.now() + FINALIZATION_WAIT_MS; Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      row = await this.databases.findRow(databaseId);
      if (!row || row.finalized) return true;
    }
    return false;
  }

  /** Whether the database is finalized, or deleted with its finalization due (it may be under way). */
  private async finalizationDue(databaseId: string): Promise<boolean> {
    const row = await this.databases.findRow(databaseId);
    return !row || !!row.finalized || isFinalizationDue(row);
  }

  /**
   * Gives up a pending credential: it expires now, so the expiry job (enqueued here) or the sweep
   * drops its role if one was made, and marks it dropped. Never throws (the sweep also finds it).
   */
  private async abandon(database: DatabaseEntity, credentialId: string): Promise<void> {
    try {
      const at = new Date();
      await this.credentials.abandonPending(credentialId, at);
      await this.jobs.dispatch('ExpireCredential', { credentialId }, { jobId: expireJobId(credentialId, at) });
    } catch (err) {
      this.logger.error(
        { databaseId: database.id, credentialId, err: messageOf(err) },
        'could not record an abandoned credential; the sweep will',
      );
    }
  }

  /**
   * Applies `VALID UNTIL` at the credential's recorded expiry and enqueues the job that drops the
   * role then. No metadata transaction is open during the data-plane call: the expiry is read,
   * applied, and read again; when a rotation changed it meanwhile the latest moment is applied
   * again, so the last `VALID UNTIL` applied is the latest recorded (the job drops the role at the
   * recorded moment regardless). The sweep passes the servers it found not answering: `VALID UNTIL`
   * is not re-asserted there (the job is still enqueued).
   */
  private async scheduleExpiry(
    database: DatabaseEntity,
    credential: CredentialEntity,
    unanswering?: UnansweringServers,
  ): Promise<void> {
    const read = () => this.credentials.findExpiry(credential.id);
    let current = await read();
    for (let attempt = 0; attempt < 3 && current?.expiresAt && !current.dropped; attempt += 1) {
      const serverId = serverOf(database);
      if (unanswering?.skip(serverId)) break;
      const applied = current.expiresAt;
      try {
        await this.dataPlane.expireLoginRole(serverId, credential.id, applied);
      } catch (err) {
        // The job (or the sweep) drops the role at that moment anyway.
        unanswering?.note(serverId, err);
        this.logger.warn({ credentialId: credential.id, err: messageOf(err) }, 'could not set VALID UNTIL yet');
        break;
      }
      current = await read();
      if (current?.expiresAt?.getTime() === applied.getTime()) break;
    }
    const at = current && !current.dropped ? current.expiresAt : null;
    if (at) await this.enqueueExpiry(credential.id, at);
  }

  /** Enqueues the job that drops the credential's role at `at` (one job per credential and moment). */
  private async enqueueExpiry(credentialId: string, at: Date): Promise<void> {
    await this.jobs.dispatch(
      'ExpireCredential',
      { credentialId },
      { jobId: expireJobId(credentialId, at), delayMs: Math.max(0, at.getTime() - Date.now()) },
    );
  }

  private async created(issued: Issued<unknown>, workspace: WorkspaceEntity): Promise<CreateCredentialResponse> {
    return {
      id: issued.credential.id,
      database: await this.databases.describe(issued.database, workspace),
      tenant: issued.credential.tenant ?? undefined,
      internal: issued.credential.internal,
      password: issued.password,
      created: issued.credential.created,
    };
  }
}
