import { Injectable } from '@nestjs/common';
import { In, IsNull, MoreThan, Not, type Repository } from 'typeorm';
import { MetadataTransactions } from '../database/metadata-transactions';
import { CredentialRotationEntity } from './credential-rotation.entity';
import { CredentialEntity, type CredentialGroup } from './credential.entity';

/**
 * Every statement on `credentials` and `credential_rotations` (habit 15). Statements go through the
 * transaction the context carries (MetadataTransactions): inside its withTransaction they join it,
 * outside they run on their own.
 */
@Injectable()
export class CredentialsRepository {
  constructor(private readonly txHost: MetadataTransactions) {}

  private get repo(): Repository<CredentialEntity> {
    return this.txHost.tx.getRepository(CredentialEntity);
  }

  /** Inserts a new credential (raw: no look-up of the id as `save` does, no query building). */
  async insert(row: Omit<CredentialEntity, 'created' | 'database'>): Promise<CredentialEntity> {
    const [{ created }] = await this.txHost.tx.query<{ created: Date }[]>(
      `INSERT INTO credentials (id, database_id, password_ciphertext, internal, pending, issued_by_rotation, tenant,
                                created_by, expires_at, expired_by_rotation_id, dropped)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING created`,
      [
        row.id,
        row.databaseId,
        row.passwordCiphertext,
        row.internal,
        row.pending,
        row.issuedByRotation,
        row.tenant,
        row.createdBy,
        row.expiresAt,
        row.expiredByRotationId,
        row.dropped,
      ],
    );
    return Object.assign(new CredentialEntity(), row, { created });
  }

  /** Credentials of the database not dropped (pending ones included: they count against the plan). */
  countLive(databaseId: string): Promise<number> {
    return this.repo.countBy({ databaseId, dropped: IsNull() });
  }

  /**
   * The database's usable credentials (not dropped, not pending), oldest first: the internal ones or
   * the others, and when `tenant` is given only that tenant's.
   */
  listUsable(databaseId: string, filter: { internal: boolean; tenant?: string }): Promise<CredentialEntity[]> {
    return this.repo.find({
      where: {
        databaseId,
        dropped: IsNull(),
        pending: false,
        internal: filter.internal,
        ...(filter.tenant === undefined ? {} : { tenant: filter.tenant }),
      },
      order: { created: 'ASC', id: 'ASC' },
    });
  }

  findUsable(id: string, databaseId: string): Promise<CredentialEntity | null> {
    return this.repo.findOne({ where: { id, databaseId, dropped: IsNull(), pending: false } });
  }

  findWithDatabase(id: string): Promise<CredentialEntity | null> {
    return this.repo.findOne({ where: { id }, relations: { database: true } });
  }

  /** The credential's expiry and whether it is dropped (a narrow read). */
  findExpiry(id: string): Promise<Pick<CredentialEntity, 'id' | 'expiresAt' | 'dropped'> | null> {
    return this.repo.findOne({ select: { id: true, expiresAt: true, dropped: true }, where: { id } });
  }

  /** Which of these ids have a row not marked dropped (pending ones included). */
  async notDroppedIds(ids: string[]): Promise<Set<string>> {
    return new Set(
      (await this.repo.find({ select: { id: true }, where: { id: In(ids), dropped: IsNull() } })).map((c) => c.id),
    );
  }

  /**
   * Makes the credential expire at `at` unless it is dropped or expires earlier already (a
   * rotation's expiry is kept): a delete's wish, which the overdue sweep carries out if the delete
   * does not get to it.
   */
  async expireNoLaterThan(id: string, at: Date): Promise<void> {
    await this.repo
      .createQueryBuilder()
      .update()
      .set({ expiresAt: at })
      .where('id = :id AND dropped IS NULL AND (expires_at IS NULL OR expires_at > :at)', { id, at })
      .execute();
  }

  /** Marks the credential dropped unless it already is; how many rows changed. */
  async markDropped(id: string, at: Date): Promise<number> {
    return (await this.repo.update({ id, dropped: IsNull() }, { dropped: at })).affected ?? 0;
  }

  /** Marks every credential of the database dropped (its finalization). */
  async markDroppedOfDatabase(databaseId: string, at: Date): Promise<void> {
    await this.repo.update({ databaseId, dropped: IsNull() }, { dropped: at });
  }

  /** Removes a pending row whose role cannot exist. */
  async deletePending(id: string): Promise<void> {
    await this.repo.delete({ id, pending: true });
  }

  /** Gives up a pending credential (it expires at `at`), unless it was confirmed, given up or dropped. */
  async abandonPending(id: string, at: Date): Promise<void> {
    await this.repo.update({ id, pending: true, dropped: IsNull(), expiresAt: IsNull() }, { expiresAt: at });
  }

  /**
   * Gives up, as of `now`, every create still pending since before `createdBefore`. The condition is
   * written out (no parameter in it) so that it implies IDX_credentials_pending_by_created's in any
   * plan, a generic one included: only the pending rows are read. A row another transaction holds
   * (a finalization marking its database's credentials dropped, a create confirming it) is skipped,
   * not waited for: this one statement locks rows of many databases, in no order those transactions
   * share, so waiting could deadlock with them; the next sweep gives up what is still pending.
   */
  async abandonPendingCreatedBefore(createdBefore: Date, now: Date): Promise<void> {
    await this.txHost.tx.query(
      `UPDATE credentials SET expires_at = $2
        WHERE id IN (SELECT id FROM credentials
                      WHERE pending AND dropped IS NULL AND expires_at IS NULL AND created <= $1
                        FOR UPDATE SKIP LOCKED)
          AND pending AND dropped IS NULL AND expires_at IS NULL`,
      [createdBefore, now],
    );
  }

  /** Confirms a pending credential (in the context's transaction); how many rows changed. */
  async confirmPending(id: string): Promise<number> {
    return (
      (await this.repo.update({ id, pending: true, dropped: IsNull(), expiresAt: IsNull() }, { pending: false }))
        .affected ?? 0
    );
  }

  /**
   * Confirms a pending credential in one statement while its database is not finalized (the row
   * taken FOR SHARE, so a finalization, which locks it exclusively, takes turns with this);
   * whether it did.
   */
  async confirmPendingIfDatabaseLive(id: string, databaseId: string): Promise<boolean> {
    const confirmed: [unknown[], number] = await this.txHost.tx.query(
      `UPDATE credentials SET pending = false
        WHERE id = $1 AND pending AND dropped IS NULL AND expires_at IS NULL
          AND EXISTS (SELECT 1 FROM databases WHERE id = $2 AND finalized IS NULL FOR SHARE)
        RETURNING id`,
      [id, databaseId],
    );
    return confirmed[1] === 1;
  }

  /**
   * The database's credentials not dropped other than `exceptId`, pending ones included (a
   * rotation's previous ones are those not pending; pending creates count against its plan check).
   */
  liveExcept(databaseId: string, exceptId: string): Promise<CredentialEntity[]> {
    return this.repo.find({ where: { databaseId, dropped: IsNull(), id: Not(exceptId) } });
  }

  /**
   * How many credentials of the database (not dropped) are still working at `at` by their current
   * expiry, or will once made (pending creates, whose roles may be in the making; not other
   * rotations' credentials, which their own check decides), and how many of those made are of
   * `group` (those the rotation replaces): what a rotation's plan check counts before its role is made.
   */
  async countWorkingAt(
    databaseId: string,
    at: Date,
    group: CredentialGroup,
  ): Promise<{ all: number; inGroup: number }> {
    const [row] = await this.txHost.tx.query<{ all: number; inGroup: number }[]>(
      `SELECT count(*)::int AS "all",
              count(*) FILTER (WHERE NOT pending AND tenant IS NOT DISTINCT FROM $3 AND internal = $4)::int AS "inGroup"
         FROM credentials
        WHERE database_id = $1 AND dropped IS NULL AND NOT (pending AND issued_by_rotation)
          AND (expires_at IS NULL OR expires_at > $2)`,
      [databaseId, at, group.tenant, group.internal],
    );
    return row;
  }

  /**
   * Sets a rotation's expiry on a previous credential unless it is dropped or already expires no
   * later, as committed now: a delete (or a rotation) that recorded an earlier expiry after the
   * rotation read the credentials wins. Whether it was set.
   */
  async setRotationExpiry(id: string, expiresAt: Date, rotationId: string): Promise<boolean> {
    const result = await this.repo
      .createQueryBuilder()
      .update()
      .set({ expiresAt, expiredByRotationId: rotationId })
      .where('id = :id AND dropped IS NULL AND (expires_at IS NULL OR expires_at > :expiresAt)', { id, expiresAt })
      .execute();
    return result.affected === 1;
  }

  /**
   * Credentials not dropped whose expiry has passed, with their database's server: at most `take`,
   * taken from the servers in turn (each server's most overdue, then each server's second, …), so a
   * backlog on one server (one that does not answer) never keeps another's out of a batch.
   * The due credentials come from IDX_credentials_expiry_due and each one's server from its
   * database's primary key: the planner, which cannot tell how few of the credentials not dropped
   * are due (it takes the two conditions as independent), would otherwise hash every row of
   * `databases`, tombstones included, at every pass; a LATERAL with a LIMIT is not turned into a join.
   */
  overdueInTurnByServer(now: Date, take: number): Promise<{ id: string; serverId: string | null }[]> {
    return this.txHost.tx.query(
      `SELECT id, server_id AS "serverId"
         FROM (SELECT c.id, d.server_id, c.expires_at,
                      row_number() OVER (PARTITION BY d.server_id ORDER BY c.expires_at, c.id) AS turn
                 FROM credentials c
                 CROSS JOIN LATERAL (SELECT server_id FROM databases WHERE id = c.database_id LIMIT 1) d
                WHERE c.dropped IS NULL AND c.expires_at <= $1) overdue
        ORDER BY turn, expires_at, id
        LIMIT $2`,
      [now, take],
    );
  }

  /** Credentials not dropped with an expiry still ahead, with their database, the soonest first. */
  waitingWithDatabase(now: Date, take: number): Promise<CredentialEntity[]> {
    return this.repo.find({
      where: { dropped: IsNull(), expiresAt: MoreThan(now) },
      relations: { database: true },
      order: { expiresAt: 'ASC' },
      take,
    });
  }

  /** Records a rotation (`credential_rotations` belongs to this aggregate). */
  saveRotation(row: Partial<CredentialRotationEntity>): Promise<CredentialRotationEntity> {
    const repo = this.txHost.tx.getRepository(CredentialRotationEntity);
    return repo.save(repo.create(row));
  }
}
