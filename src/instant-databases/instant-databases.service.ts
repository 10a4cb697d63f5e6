import { MetadataTransactions } from '../database/metadata-transactions';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import { randomToken } from '../common/crypto/tokens';
import { withinMs } from '../common/within-ms';
import { ApiException } from '../common/errors/api-exception';
import { isDependencyOutage, OUTAGE_RETRY_AFTER_SECONDS } from '../common/errors/dependency-outage';
import { ErrorCode } from '../common/errors/error-code';
import { messageOf } from '../common/errors/message-of';
import { AppConfig } from '../config/app-config';
import { CREATABLE_REGIONS, type Region } from '../config/regions';
import type { CreateCredentialResponse } from '../credentials/credential.response';
import { CredentialsService } from '../credentials/credentials.service';
import { DatabaseFinalizers } from '../databases/database-finalizers';
import { type DatabaseEntity, DatabaseStatus } from '../databases/database.entity';
import type { DatabaseResponse } from '../databases/database.response';
import { DatabasesService } from '../databases/databases.service';
import { Reconciler } from '../queues/reconciler';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { WorkspacesService } from '../workspaces/workspaces.service';
import type { DatabaseClaimEntity } from './database-claim.entity';
import { DatabaseClaimsRepository } from './database-claims.repository';
import { ProvisionedDatabaseResponse } from './provisioned-database.response';

const HOUR_MS = 3600 * 1000;
/** How often a provision waiting for its build reads the database's row. */
const BUILD_POLL_MS = 200;

/** A refusal that is the service's own (503: a region full, an outage), not the caller's. */
const isServiceFailure = (err: unknown) =>
  (err instanceof ApiException && err.getStatus() === 503) || isDependencyOutage(err);

function hashCode(code: string): string {
  return createHash('sha256').update(code).digest('hex');
}

/**
 * Instant databases: made without an account, held by a workspace nobody belongs to, with one
 * credential and a claim code; claimed into a workspace, or dropped when the code expires.
 * Abuse limits count attempts in PostgreSQL (per client address and in all), so every replica of
 * the API sees the same counts.
 */
@Injectable()
export class InstantDatabasesService implements OnModuleInit {
  private readonly logger = new Logger(InstantDatabasesService.name);

  constructor(
    private readonly txHost: MetadataTransactions,
    private readonly claims: DatabaseClaimsRepository,
    private readonly config: AppConfig,
    private readonly databases: DatabasesService,
    private readonly credentials: CredentialsService,
    private readonly workspaces: WorkspacesService,
    private readonly reconciler: Reconciler,
    private readonly finalizers: DatabaseFinalizers,
  ) {}

  onModuleInit(): void {
    this.reconciler.register('instant-databases', () => this.dropExpired());
    // A database finalized before its code expired (written off with a lost server): its code,
    // which nothing can claim now, stops holding a place under INSTANT_DATABASES_MAX_UNCLAIMED.
    this.finalizers.register('instant-databases', (database) => this.claims.expireOfDatabase(database.id, new Date()));
  }

  /** Whether the operator offers it (INSTANT_DATABASES) is the controller's guard's to check. */
  async provision(region: Region | undefined, clientAddress: string): Promise<ProvisionedDatabaseResponse> {
    const claimCode = randomToken(24);
    const claim = await this.admit(clientAddress, hashCode(claimCode));
    const name = `instant_${randomBytes(6).toString('hex')}`;
    let holder: WorkspaceEntity;
    let created: DatabaseResponse;
    try {
      holder = await this.workspaces.holdingWorkspace();
      // The claim names its database from the moment the database exists (the link commits with the
      // row): a database no claim names would be neither claimable nor dropped when the code expires.
      created = await this.databases.create(
        holder,
        { databaseName: name, region: region ?? CREATABLE_REGIONS[0] },
        {
          withinPlan: false,
          alongside: (database) => this.claims.update(claim.id, { databaseId: database.id }),
          // The request waits for the build: it goes before the builds no one waits for.
          urgent: true,
        },
      );
    } catch (err) {
      // No database was made (a region full, the metadata database failing): the code, never shown,
      // stops holding a place under the cap on unclaimed codes at once. A failure of the service's
      // (503: its retry is asked for) does not count against the address, as after a database was
      // made (abandon); any other failure still does.
      const now = new Date();
      await (isServiceFailure(err) ? this.claims.markFailed(claim.id, now) : this.claims.expire(claim.id, now)).catch(
        (expireErr: unknown) =>
          this.logger.error(
            { err: messageOf(expireErr) },
            'a failed instant database attempt keeps its place until its code expires',
          ),
      );
      throw err;
    }
    let credential: CreateCredentialResponse;
    try {
      // Without a pooled database at hand, the lifecycle job create enqueued builds it, as for any
      // database: CREATE DATABASE never runs in the request (it may take DATA_PLANE_DATABASE_DDL_TIMEOUT_MS).
      const waitMs = this.config.env.INSTANT_DATABASE_BUILD_WAIT_MS;
      if (created.status !== DatabaseStatus.Ready && !(await this.builtWithin(created.id, waitMs))) {
        throw new ApiException(
          ErrorCode.DbCreationFailure,
          `The database was not built within ${waitMs} ms on a server of region ${created.region}; retry later`,
          { status: 503, headers: { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) } },
        );
      }
      // A server that does not answer is its 503 credential_creation_failure with Retry-After (habit 17).
      credential = await this.credentials.createInstant(holder, name);
    } catch (err) {
      await this.abandon(claim.id, created.id, holder.id);
      throw err;
    }
    const host = credential.database.dbHost!.replace(/^postgres:\/\//, '');
    return {
      database: {
        id: credential.database.id,
        name,
        status: credential.database.status,
        region: credential.database.region,
        dbHost: credential.database.dbHost!,
        created: credential.database.created,
      },
      user: credential.id,
      password: credential.password,
      connectionString: `postgres://${credential.id}:${encodeURIComponent(credential.password)}@${host}`,
      claimCode,
      claimExpiresAt: claim.expiresAt,
    };
  }

  /**
   * Moves the database of `claimCode` into `workspace`, keeping its data and credentials. An
   * unknown, used or expired code is 404; a workspace that cannot take it is 400.
   */
  async claim(workspace: WorkspaceEntity, claimCode: string, developerId: string): Promise<DatabaseResponse> {
    const holder = await this.workspaces.holdingWorkspace();
    // In the context's transaction: the move (DatabasesService) joins it.
    const moved = await this.txHost.withTransaction(async () => {
      const claim = await this.claims.lockClaimable(hashCode(claimCode));
      if (!claim) throw new ApiException(ErrorCode.EntityNotFound, 'Claim code is invalid or expired');
      const database = await this.databases.moveToWorkspace(claim.databaseId!, holder.id, workspace);
      await this.claims.update(claim.id, { claimedAt: new Date(), claimedBy: developerId });
      return database;
    });
    return this.databases.describe(moved, workspace);
  }

  /**
   * After a provision failed once its database was made (not built in time, or its credential not
   * made): the database is queued for deletion due now, so it holds no capacity for the code's life,
   * and the claim is marked failed, so its code is never claimable (the caller never saw it) and the
   * attempt no longer counts against the client's address: the failure was the service's, and the
   * 503 asks the client to retry. It still counts against the service's hourly limit, which bounds
   * what failing attempts can make (rows, builds) during an outage whatever the addresses. When this
   * cannot be recorded (the metadata database failing too), the code's expiry drops the database.
   */
  private async abandon(claimId: string, databaseId: string, holderId: string): Promise<void> {
    try {
      await this.databases.deleteNowIfIn(databaseId, holderId);
      await this.claims.markFailed(claimId, new Date());
    } catch (err) {
      this.logger.error(
        { databaseId, err: messageOf(err) },
        'a failed instant database could not be deleted at once; its code expiring drops it',
      );
    }
  }

  /**
   * Whether the lifecycle job makes the database READY within `waitMs`, read from its row: the
   * request waits for the build, never runs it, so it answers within about its wait whatever the
   * server does. A build still under way then is abandoned by the caller (deleted now): the job
   * ends it, and the finalization, which takes turns with it under the database's lock on the
   * server, drops it after.
   */
  private async builtWithin(databaseId: string, waitMs: number): Promise<boolean> {
    const deadline = Date.now() + waitMs;
    const waitOver = new Error('build wait over');
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      let row: DatabaseEntity | null;
      try {
        row = await withinMs(this.databases.findRow(databaseId), left, () => waitOver);
      } catch (err) {
        if (err === waitOver) return false;
        throw err;
      }
      if (row?.status === DatabaseStatus.Ready) return true;
      if (!row || row.deleted) return false;
      await new Promise((resolve) => setTimeout(resolve, Math.min(BUILD_POLL_MS, Math.max(0, deadline - Date.now()))));
    }
  }

  /**
   * Drops (queues for finalization now) the unclaimed instant databases whose code has expired, up to
   * 500 a pass, the longest expired first. Only databases still live in the holding workspace are
   * looked at: claims are kept (they count attempts and record who claimed what), and the codes of
   * databases dropped earlier would otherwise fill every pass and hide the newly expired ones.
   */
  async dropExpired(now = new Date()): Promise<number> {
    const holder = await this.workspaces.holdingWorkspace();
    const held = (await this.databases.idsByWorkspace([holder.id])).get(holder.id) ?? [];
    const expired = await this.claims.expiredOf(held, now, 500);
    let dropped = 0;
    for (const claim of expired) {
      if (await this.databases.deleteNowIfIn(claim.databaseId!, holder.id)) dropped++;
    }
    if (dropped) this.logger.log({ dropped }, 'unclaimed instant databases queued for finalization');
    return dropped;
  }

  /**
   * Counts the attempt against the abuse limits (per address and in all, over the last hour, and the
   * unclaimed databases alive at once) and records it with its claim code, under a lock so parallel
   * attempts are counted one by one. An attempt counts from here: its code is live from the moment
   * it is recorded, before its database exists.
   */
  private async admit(clientAddress: string, codeHash: string): Promise<DatabaseClaimEntity> {
    const env = this.config.env;
    return this.txHost.withTransaction(async () => {
      await this.claims.lockAdmissions();
      const since = new Date(Date.now() - HOUR_MS);
      const byAddress = await this.claims.createdSinceBy(
        clientAddress,
        since,
        env.INSTANT_DATABASES_PER_ADDRESS_PER_HOUR,
      );
      if (byAddress.length >= env.INSTANT_DATABASES_PER_ADDRESS_PER_HOUR) {
        throw this.tooMany('from your address', byAddress[0].created);
      }
      const all = await this.claims.countSince(since);
      if (all >= env.INSTANT_DATABASES_PER_HOUR) {
        throw this.tooMany('on this service', (await this.claims.oldestSince(since))!);
      }
      const unclaimed = await this.claims.unclaimedLive(new Date());
      if (unclaimed.live >= env.INSTANT_DATABASES_MAX_UNCLAIMED) throw this.tooManyUnclaimed(unclaimed.firstExpiry!);
      return this.claims.save({
        codeHash,
        clientAddress,
        databaseId: null,
        expiresAt: new Date(Date.now() + env.INSTANT_DATABASE_CLAIM_TTL_SECONDS * 1000),
        claimedAt: null,
        claimedBy: null,
      });
    });
  }

  /**
   * The cap on unclaimed databases is a limit of this service's own, like the hourly ones (429), not
   * an outage (503, habit 17). Retry-After: until the first live code expires, at the latest; a claim
   * may make room sooner.
   */
  private tooManyUnclaimed(firstExpiry: Date): ApiException {
    const retryAfter = Math.max(1, Math.ceil((new Date(firstExpiry).getTime() - Date.now()) / 1000));
    return new ApiException(
      ErrorCode.ThresholdExceeded,
      `Too many unclaimed instant databases exist on this service; retry in ${retryAfter} seconds at the latest`,
      { headers: { 'Retry-After': String(retryAfter) } },
    );
  }

  private tooMany(where: string, oldest: Date): ApiException {
    const retryAfter = Math.max(1, Math.ceil((oldest.getTime() + HOUR_MS - Date.now()) / 1000));
    return new ApiException(
      ErrorCode.ThresholdExceeded,
      `Too many instant databases provisioned ${where} in the last hour; retry in ${retryAfter} seconds`,
      { headers: { 'Retry-After': String(retryAfter) } },
    );
  }
}
