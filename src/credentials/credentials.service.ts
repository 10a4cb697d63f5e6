import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager, In, IsNull, LessThanOrEqual, MoreThan, Not, Repository } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import type { Region } from '../config/regions';
import { SecretBox } from '../common/crypto/secret-box';
import { randomToken } from '../common/crypto/tokens';
import { PlanLimits } from '../subscriptions/plan-limits.service';
import { DataPlane } from '../data-plane/data-plane.service';
import { scramSha256Verifier } from '../data-plane/scram';
import { DatabaseFinalizers } from '../databases/database-finalizers';
import { DatabaseEntity, DatabaseStatus } from '../databases/database.entity';
import { DatabasesService } from '../databases/databases.service';
import { JobDispatcher } from '../queues/job-dispatcher';
import { Queues } from '../queues/queue-names';
import { Reconciler } from '../queues/reconciler';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { CredentialJobs, expireJobId } from './credential-jobs';
import { CredentialRotationEntity } from './credential-rotation.entity';
import { CredentialEntity } from './credential.entity';
import { CreateCredentialResponse, CredentialResponse } from './credential.response';
import type { RotateCredentialsDto } from './dto/rotate-credentials.dto';
import { messageOf } from '../common/errors/message-of';
import { isUuid } from '../common/http/uuid';

const SWEEP_BATCH = 500;
/** 32 random bytes, base64url: 43 characters, 256 bits. */
const PASSWORD_BYTES = 32;

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
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(CredentialEntity) private readonly credentials: Repository<CredentialEntity>,
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
    this.finalizers.register('credentials', (database, manager) => this.markDroppedWith(database, manager));
  }

  async create(
    workspace: WorkspaceEntity,
    databaseName: string,
    callerId: string | null,
  ): Promise<CreateCredentialResponse> {
    const database = await this.databases.findOperable(workspace, databaseName);
    const issued = await this.issue(database.id, callerId, 'pessimistic_read', () => Promise.resolve(undefined), {
      withinPlanOf: workspace.id,
    });
    return this.created(issued, workspace);
  }

  /** The database's credentials that still exist, oldest first; never a password. */
  async list(workspace: WorkspaceEntity, databaseName: string): Promise<CredentialResponse[]> {
    const database = await this.databases.findOperable(workspace, databaseName);
    const rows = await this.credentials.find({
      where: { databaseId: database.id, dropped: IsNull() },
      order: { created: 'ASC', id: 'ASC' },
    });
    const summary = this.databases.summarize(database, workspace);
    return rows.map((c) => ({ id: c.id, database: summary, created: c.created, expires: c.expiresAt ?? undefined }));
  }

  /** Terminates the credential's sessions and drops its role (what it owned goes to the owner role). */
  async delete(workspace: WorkspaceEntity, databaseName: string, credentialId: string): Promise<void> {
    const database = await this.databases.findOperable(workspace, databaseName);
    const credential = isUuid(credentialId)
      ? await this.credentials.findOne({ where: { id: credentialId, databaseId: database.id, dropped: IsNull() } })
      : null;
    if (!credential) {
      throw new ApiException(ErrorCode.EntityNotFound, `No credential ${credentialId} on database ${databaseName}`);
    }
    try {
      await this.dataPlane.dropLoginRole(database.region, database.physicalName, credential.id);
    } catch (err) {
      // The wish is recorded, so the expiry sweep finishes the job once the data plane answers.
      const now = new Date();
      await this.credentials.update({ id: credential.id }, { expiresAt: now });
      this.logger.error(
        { errorCode: ErrorCode.CredentialPropagationFailure, credentialId, err: messageOf(err) },
        'credential role could not be dropped; the sweep will retry',
      );
      throw new ApiException(
        ErrorCode.CredentialPropagationFailure,
        'The credential could not be removed from the database server yet; it will be removed shortly',
      );
    }
    await this.credentials.update({ id: credential.id, dropped: IsNull() }, { dropped: new Date() });
  }

  /**
   * Issues a new credential and schedules every credential that existed before the call to expire
   * after the delay (keeping an earlier expiry a previous rotation set). Rotations of one database
   * are serialized by its row lock, so a later rotation never has its new credential expired by an
   * earlier one.
   */
  async rotate(
    workspace: WorkspaceEntity,
    databaseName: string,
    dto: RotateCredentialsDto,
    callerId: string,
  ): Promise<CreateCredentialResponse> {
    const database = await this.databases.findOperable(workspace, databaseName);
    const delayHours = dto.delayOldSecretsExpirationHours;
    const issued = await this.issue(database.id, callerId, 'pessimistic_write', async (manager, db, fresh) => {
      const expireAt = new Date(Date.now() + delayHours * 3600 * 1000);
      const rotation = await manager.getRepository(CredentialRotationEntity).save(
        manager.getRepository(CredentialRotationEntity).create({
          databaseId: db.id,
          newCredentialId: fresh.id,
          reason: dto.reason ?? '',
          delayHours,
          oldExpireAt: expireAt,
          requestedBy: callerId,
        }),
      );
      const previous = await manager.getRepository(CredentialEntity).find({
        where: { databaseId: db.id, dropped: IsNull(), id: Not(fresh.id) },
      });
      for (const old of previous) {
        if (old.expiresAt && old.expiresAt.getTime() <= expireAt.getTime()) continue;
        old.expiresAt = expireAt;
        old.expiredByRotationId = rotation.id;
        await manager.update(
          CredentialEntity,
          { id: old.id },
          { expiresAt: expireAt, expiredByRotationId: rotation.id },
        );
      }
      return previous;
    });
    for (const old of issued.extra) await this.scheduleExpiry(issued.database, old);
    return this.created(issued, workspace);
  }

  /**
   * Drops a credential whose expiry has passed (the expiry job; also the sweep). Harmless when it
   * runs late, twice, or early (then it does nothing). Returns whether it dropped the role now.
   */
  async expire(credentialId: string, now = new Date()): Promise<boolean> {
    const credential = await this.credentials.findOne({ where: { id: credentialId }, relations: { database: true } });
    if (!credential?.database || credential.dropped || !credential.expiresAt) return false;
    if (credential.expiresAt.getTime() > now.getTime()) return false;
    await this.dataPlane.dropLoginRole(credential.database.region, credential.database.physicalName, credential.id);
    const { affected } = await this.credentials.update(
      { id: credential.id, dropped: IsNull() },
      { dropped: new Date() },
    );
    if (affected) this.logger.log({ credentialId }, 'expired credential dropped');
    return (affected ?? 0) > 0;
  }

  /**
   * One reconcile pass: drops every credential whose expiry has passed (its job may be lost), and
   * for those still waiting re-asserts `VALID UNTIL` and re-enqueues their job (duplicates collapse);
   * then drops orphan credential roles (see dropOrphanRoles).
   */
  async sweep(now = new Date()): Promise<void> {
    await this.sweepExpiries(now);
    await this.dropOrphanRoles();
  }

  /**
   * Drops credential roles a failed create left behind: on each region's server, the UUID-named
   * members of the owner roles of this deployment's live (not finalized) databases that have no
   * `credentials` row. Nothing else is ever touched: not roles outside those owner roles, not the
   * owner roles (their names are not UUIDs), not roles with a row (even a dropped one).
   *
   * A create makes its role on the data plane before its row commits, while holding the database
   * row lock (shared) from before the role exists until its transaction ends. So a role seen without
   * a row is only a candidate: it is dropped only after taking that row lock exclusively (which waits
   * for every create in flight on the database to commit or roll back, and keeps new ones out) and
   * finding, in a fresh statement, still no row. Then no row for it can appear anymore: its create
   * rolled back (its own cleanup drop may race ours; drops take turns and are idempotent). Returns
   * how many roles were dropped.
   */
  async dropOrphanRoles(): Promise<number> {
    const live = await this.dataSource.getRepository(DatabaseEntity).find({
      select: { id: true, region: true, physicalName: true },
      where: { finalized: IsNull() },
    });
    const byRegion = new Map<Region, DatabaseEntity[]>();
    for (const database of live) {
      const list = byRegion.get(database.region) ?? [];
      list.push(database);
      byRegion.set(database.region, list);
    }
    let dropped = 0;
    for (const [region, databases] of byRegion) {
      let members: { physical: string; role: string }[];
      try {
        members = await this.dataPlane.credentialRoleMembers(
          region,
          databases.map((d) => d.physicalName),
        );
      } catch (err) {
        this.logger.warn({ region, err: messageOf(err) }, 'could not look for orphan credential roles');
        continue;
      }
      if (members.length === 0) continue;
      const known = new Set(
        (await this.credentials.find({ select: { id: true }, where: { id: In(members.map((m) => m.role)) } })).map(
          (c) => c.id,
        ),
      );
      const candidates = new Map<string, string[]>();
      for (const { physical, role } of members) {
        if (known.has(role)) continue;
        const roles = candidates.get(physical) ?? [];
        roles.push(role);
        candidates.set(physical, roles);
      }
      for (const database of databases) {
        const roles = candidates.get(database.physicalName);
        if (!roles) continue;
        try {
          dropped += await this.dropOrphansOf(database.id, roles);
        } catch (err) {
          this.logger.error(
            { databaseId: database.id, err: messageOf(err) },
            'orphan credential roles could not be dropped',
          );
        }
      }
    }
    return dropped;
  }

  /** Drops those of `roles` that still have no row, with the database row locked exclusively. */
  private dropOrphansOf(databaseId: string, roles: string[]): Promise<number> {
    return this.dataSource.transaction(async (manager) => {
      const database = await this.databases.lock(manager, databaseId, 'pessimistic_write');
      if (!database || database.finalized) return 0;
      const rows = await manager.find(CredentialEntity, { select: { id: true }, where: { id: In(roles) } });
      const known = new Set(rows.map((c) => c.id));
      let dropped = 0;
      for (const role of roles.filter((r) => !known.has(r))) {
        await this.dataPlane.dropLoginRole(database.region, database.physicalName, role);
        this.logger.warn({ databaseId, role }, 'orphan credential role dropped (a failed create left it behind)');
        dropped += 1;
      }
      return dropped;
    });
  }

  private async sweepExpiries(now: Date): Promise<void> {
    const overdue = await this.credentials.find({
      select: { id: true },
      where: { dropped: IsNull(), expiresAt: LessThanOrEqual(now) },
      order: { expiresAt: 'ASC' },
      take: SWEEP_BATCH,
    });
    for (const { id } of overdue) {
      try {
        await this.expire(id, now);
      } catch (err) {
        this.logger.error({ credentialId: id, err: messageOf(err) }, 'expired credential could not be dropped');
      }
    }
    const waiting = await this.credentials.find({
      where: { dropped: IsNull(), expiresAt: MoreThan(now) },
      relations: { database: true },
      order: { expiresAt: 'ASC' },
      take: SWEEP_BATCH,
    });
    for (const credential of waiting) {
      if (credential.database) await this.scheduleExpiry(credential.database, credential);
    }
  }

  /**
   * Refuses a credential beyond the plan's number per database. Creates of one database take turns
   * (a transaction-scoped advisory lock), as they share the row lock.
   */
  private async assertRoomInPlan(manager: EntityManager, workspaceId: string, databaseId: string): Promise<void> {
    await manager.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`credentials:${databaseId}`]);
    await this.plans.assertRoomFor(manager, workspaceId, 'credentials', () =>
      manager.getRepository(CredentialEntity).countBy({ databaseId, dropped: IsNull() }),
    );
  }

  /**
   * Creates the role on the data plane and the row, in one metadata transaction holding the
   * database row lock (so finalization or a rotation cannot interleave); `extra` runs in the same
   * transaction. Any failure after the role was made drops it again.
   */
  private async issue<T>(
    databaseId: string,
    callerId: string | null,
    lock: 'pessimistic_read' | 'pessimistic_write',
    extra: (manager: EntityManager, database: DatabaseEntity, fresh: CredentialEntity) => Promise<T>,
    options: { withinPlanOf?: string } = {},
  ): Promise<Issued<T>> {
    const id = randomUUID();
    const password = randomToken(PASSWORD_BYTES);
    const verifier = await scramSha256Verifier(password);
    let made: DatabaseEntity | undefined;
    try {
      return await this.dataSource.transaction(async (manager) => {
        const database = await this.databases.lock(manager, databaseId, lock);
        if (!database || database.finalized) {
          throw new ApiException(ErrorCode.EntityNotFound, 'The database no longer exists');
        }
        if (database.status !== DatabaseStatus.Ready) {
          throw new ApiException(
            ErrorCode.DbStatusFailure,
            `Database ${database.name} is not ready yet (status ${database.status}); credentials can be created once it is READY`,
          );
        }
        if (options.withinPlanOf) await this.assertRoomInPlan(manager, options.withinPlanOf, databaseId);
        try {
          await this.dataPlane.createLoginRole(database.region, database.physicalName, id, verifier);
        } catch (err) {
          this.logger.error(
            { errorCode: ErrorCode.CredentialCreationFailure, databaseId, err: messageOf(err) },
            'credential role could not be created',
          );
          throw new ApiException(
            ErrorCode.CredentialCreationFailure,
            'The credential could not be created on the database server; nothing was left behind, retry later',
          );
        }
        made = database;
        const repo = manager.getRepository(CredentialEntity);
        const credential = await repo.save(
          repo.create({
            id,
            databaseId,
            passwordCiphertext: this.box.seal(password),
            internal: false,
            tenant: null,
            createdBy: callerId,
            expiresAt: null,
            expiredByRotationId: null,
            dropped: null,
          }),
        );
        return { credential, database, password, extra: await extra(manager, database, credential) };
      });
    } catch (err) {
      if (made) {
        await this.dataPlane
          .dropLoginRole(made.region, made.physicalName, id)
          .catch((cleanup: unknown) =>
            this.logger.error({ credentialId: id, err: messageOf(cleanup) }, 'could not remove a half-made credential'),
          );
      }
      throw err;
    }
  }

  /**
   * Applies `VALID UNTIL` at the credential's recorded expiry and enqueues the job that drops the
   * role then. The expiry is read again with the database row locked (shared): rotations change it
   * only while holding that lock exclusively, so the last `VALID UNTIL` applied is always the latest
   * recorded moment, and an earlier rotation finishing late never puts its later moment back over
   * the one a later rotation set (the sweep, reading a stale row, cannot either).
   */
  private async scheduleExpiry(database: DatabaseEntity, credential: CredentialEntity): Promise<void> {
    const at = await this.dataSource.transaction(async (manager) => {
      await this.databases.lock(manager, database.id, 'pessimistic_read');
      const current = await manager.findOne(CredentialEntity, {
        select: { id: true, expiresAt: true, dropped: true },
        where: { id: credential.id },
      });
      if (!current?.expiresAt || current.dropped) return null;
      try {
        await this.dataPlane.expireLoginRole(database.region, credential.id, current.expiresAt);
      } catch (err) {
        // The job (or the sweep) drops the role at that moment anyway.
        this.logger.warn({ credentialId: credential.id, err: messageOf(err) }, 'could not set VALID UNTIL yet');
      }
      return current.expiresAt;
    });
    if (!at) return;
    await this.jobs.dispatch(
      Queues.CredentialExpiry,
      CredentialJobs.Expire,
      { credentialId: credential.id },
      { jobId: expireJobId(credential.id, at), delayMs: Math.max(0, at.getTime() - Date.now()) },
    );
  }

  private async markDroppedWith(database: DatabaseEntity, manager: EntityManager): Promise<void> {
    await manager.update(CredentialEntity, { databaseId: database.id, dropped: IsNull() }, { dropped: new Date() });
  }

  private created(issued: Issued<unknown>, workspace: WorkspaceEntity): CreateCredentialResponse {
    return {
      id: issued.credential.id,
      database: this.databases.describe(issued.database, workspace),
      tenant: issued.credential.tenant ?? undefined,
      internal: issued.credential.internal,
      password: issued.password,
      created: issued.credential.created,
    };
  }
}
