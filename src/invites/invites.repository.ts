import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Brackets, DataSource, type Repository, type SelectQueryBuilder } from 'typeorm';
import { writeRows } from '../database/hot-query';
import { MetadataTransactions } from '../database/metadata-transactions';
import { pruneOlderThan, windowWaitSql } from '../database/sliding-window';
import { lockForContextTransaction } from '../database/transaction-lock';
import { InviteEntity, InviteState } from './invite.entity';

/** The states of an invite not yet used (they read EXPIRED once `expiresAt` has passed). */
export const OPEN_STATES = [InviteState.EmailPending, InviteState.EmailSent];

/** What the invite e-mail needs, read with its lease. */
export interface LeasedInvite {
  email: string;
  code_ciphertext: string;
  expires_at: Date;
  workspace_name: string;
  sender_email: string;
}

/**
 * Every statement on `invites` and `invite_sends` (the records of invite e-mails, counted by the
 * limits; habit 15). Statements go through the transaction the context carries
 * (MetadataTransactions): inside its withTransaction they join it, outside they run on their own;
 * the e-mail job's single-statement writes run on the pool itself (writeRows), outside any transaction.
 */
@Injectable()
export class InvitesRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly txHost: MetadataTransactions,
  ) {}

  private get repo(): Repository<InviteEntity> {
    return this.txHost.tx.getRepository(InviteEntity);
  }

  /**
   * Takes the invite e-mail allowance of this sender and of this recipient address for the rest of
   * the context's transaction (refused outside one): creates by the same sender, or to the same
   * address, take turns from here to their commit, so each counts what the others recorded. Always
   * in this order (sender, then address), so two creates never wait on each other in a circle.
   */
  lockSendAllowance(senderId: string, email: string): Promise<void> {
    return lockForContextTransaction(this.txHost, `invite-sends:sender:${senderId}`, `invite-sends:to:${email}`);
  }

  /**
   * Seconds until the sender, the address, and the service as a whole may send another invite
   * e-mail: null for one still under its limit (fewer than `perSender` / `perRecipient` / `total`
   * e-mails recorded in the last `windowSeconds`). Otherwise the wait ends when the e-mail that
   * brought it to its limit (the limit-th most recent) leaves the window. Read after
   * lockSendAllowance, in the same transaction: a later statement of a read-committed transaction
   * sees what the lock's previous holders committed. The service's total is read in the same
   * statement but under no lock of its own (see InvitesService.admitEmail).
   */
  async sendAllowanceWait(
    senderId: string,
    email: string,
    limits: { perSender: number; perRecipient: number; total: number; windowSeconds: number },
  ): Promise<{ sender: number | null; recipient: number | null; total: number | null }> {
    const wait = (where: string, limit: string) =>
      windowWaitSql({ table: 'invite_sends', at: 'created', where, limit, window: '$5' });
    const [row] = await this.txHost.tx.query<
      { sender: number | null; recipient: number | null; total: number | null }[]
    >(
      `SELECT ${wait('sender_id = $1::uuid', '$3')} AS sender, ${wait('email = $2::varchar', '$4')} AS recipient,
              ${wait('true', '$6')} AS total`,
      [senderId, email, limits.perSender, limits.perRecipient, limits.windowSeconds, limits.total],
    );
    return row;
  }

  /**
   * Inserts an EMAIL_PENDING invite unless `memberCondition` (SQL over $1, the workspace id, and $2,
   * the e-mail) holds, and records its e-mail in `invite_sends` with it; answers the new row's
   * columns, or nothing when it held. One statement: the member check, expiring an open invite that
   * has run out (it no longer blocks a new one; `expired` is read before the insert, so that runs
   * first), the insert and the e-mail's record (only for an invite inserted). It runs in the
   * context's transaction, which holds the allowance's lock. A concurrent invite for the same address
   * meets the open-invite unique index (the error is the caller's; the transaction and so the record
   * roll back).
   */
  insertUnlessMember(
    memberCondition: string,
    invite: {
      workspaceId: string;
      email: string;
      senderId: string;
      codeHash: string;
      codeCiphertext: string;
      expiresAt: Date;
    },
  ): Promise<{ id: string; created: Date; updated: Date; expires_at: Date }[]> {
    const open = OPEN_STATES.map((state) => `'${state}'`).join(', ');
    return this.txHost.tx.query(
      `WITH member AS (SELECT ${memberCondition} AS found),
            expired AS (
              UPDATE invites SET state = '${InviteState.Expired}', updated = now()
               WHERE workspace_id = $1 AND email = $2 AND state IN (${open}) AND expires_at <= now()
                 AND NOT (SELECT found FROM member)
              RETURNING 1),
            inserted AS (
              INSERT INTO invites (workspace_id, sender_id, email, code_hash, code_ciphertext, state, expires_at)
              SELECT $1::uuid, $3::uuid, $2::varchar, $4::varchar, $5::text, '${InviteState.EmailPending}'::invite_state, $6::timestamptz
               WHERE NOT (SELECT found FROM member) AND (SELECT count(*) FROM expired) >= 0
              RETURNING id, created, updated, expires_at),
            recorded AS (INSERT INTO invite_sends (sender_id, email) SELECT $3::uuid, $2::varchar FROM inserted)
       SELECT id, created, updated, expires_at FROM inserted`,
      [invite.workspaceId, invite.email, invite.senderId, invite.codeHash, invite.codeCiphertext, invite.expiresAt],
    );
  }

  /** The workspace's invites (with workspace and sender), oldest first; with `state`, only those that read so. */
  list(workspaceId: string, state?: InviteState): Promise<InviteEntity[]> {
    const query = this.withRelations(this.repo.createQueryBuilder('i'))
      .where('i.workspace_id = :workspaceId', { workspaceId })
      .orderBy('i.created', 'ASC')
      .addOrderBy('i.id', 'ASC');
    if (state === InviteState.Expired) {
      query.andWhere(
        new Brackets((q) =>
          q
            .where('i.state = :expired', { expired: InviteState.Expired })
            .orWhere('(i.state IN (:...open) AND i.expires_at <= now())', { open: OPEN_STATES }),
        ),
      );
    } else if (state) {
      query.andWhere('i.state = :state', { state });
      if (OPEN_STATES.includes(state)) query.andWhere('i.expires_at > now()');
    }
    return query.getMany();
  }

  /** Deletes the workspace's invite; how many rows went. */
  async delete(id: string, workspaceId: string): Promise<number> {
    return (await this.repo.delete({ id, workspaceId })).affected ?? 0;
  }

  /** The invite with this code hash, with workspace and sender. */
  findByCodeHash(codeHash: string): Promise<InviteEntity | null> {
    return this.withRelations(this.repo.createQueryBuilder('i'))
      .where('i.code_hash = :hash', { hash: codeHash })
      .getOne();
  }

  /** The invite with this code hash, locked (FOR UPDATE) for the rest of the context's transaction. */
  lockByCodeHash(codeHash: string): Promise<InviteEntity | null> {
    return this.txHost
      .rowLocking(InviteEntity, 'i', 'an invite row lock')
      .where('i.code_hash = :hash', { hash: codeHash })
      .getOne();
  }

  async markVerified(id: string, acceptedBy: string): Promise<void> {
    await this.repo.update(id, { state: InviteState.Verified, acceptedBy, codeCiphertext: null });
  }

  /**
   * Takes the e-mail lease for `leaseSeconds` when the invite is still owed its e-mail, no lease
   * runs and `senderIsMember` (a condition on the invite `i`) holds, answering what the message
   * needs; nothing otherwise. One statement on the pool.
   */
  async leaseEmail(inviteId: string, leaseSeconds: number, senderIsMember: string): Promise<LeasedInvite | undefined> {
    const [invite] = await writeRows<LeasedInvite>(
      this.dataSource,
      `UPDATE invites i
          SET email_lease_until = now() + make_interval(secs => ${leaseSeconds}), updated = now()
         FROM workspaces w, developers s
        WHERE i.id = $1 AND w.id = i.workspace_id AND s.id = i.sender_id
          AND i.state = '${InviteState.EmailPending}' AND i.email_sent_at IS NULL AND i.expires_at > now()
          AND i.code_ciphertext IS NOT NULL
          AND (i.email_lease_until IS NULL OR i.email_lease_until < now()) AND ${senderIsMember}
       RETURNING i.email, i.code_ciphertext, i.expires_at, w.name AS workspace_name, s.email AS sender_email`,
      [inviteId],
    );
    return invite;
  }

  /** Records the e-mail sent (and releases the lease). An invite accepted meanwhile keeps its state. */
  async recordEmailSent(inviteId: string): Promise<void> {
    await writeRows(
      this.dataSource,
      `UPDATE invites
          SET state = CASE WHEN state = '${InviteState.EmailPending}' THEN '${InviteState.EmailSent}'::invite_state ELSE state END,
              email_sent_at = now(), email_attempts = email_attempts + 1, code_ciphertext = NULL,
              last_error = NULL, email_lease_until = NULL, updated = now()
        WHERE id = $1`,
      [inviteId],
    );
  }

  /** Records a failed send (and releases the lease). */
  async recordEmailFailure(inviteId: string, lastError: string): Promise<void> {
    await writeRows(
      this.dataSource,
      `UPDATE invites
          SET email_attempts = email_attempts + 1, last_error = $2, email_lease_until = NULL, updated = now()
        WHERE id = $1`,
      [inviteId, lastError],
    );
  }

  /**
   * Ids of the invites still owed an e-mail whose `senderIsMember` (a condition on the invite `i`)
   * holds: read from IDX_invites_email_owed, not from every invite ever sent (the state is a
   * literal, so any plan, a generic one included, matches its condition).
   */
  async owedEmailIds(senderIsMember: string): Promise<string[]> {
    const rows = await this.repo
      .createQueryBuilder('i')
      .select('i.id', 'id')
      .where(`i.state = '${InviteState.EmailPending}' AND i.email_sent_at IS NULL AND i.expires_at > now()`)
      .andWhere(senderIsMember)
      .getRawMany<{ id: string }>();
    return rows.map((r) => r.id);
  }

  /**
   * Deletes up to `take` records of invite e-mails older than `windowSeconds` (they no longer count),
   * the oldest first, in one statement (rows another transaction holds skipped, not waited for); how
   * many it deleted.
   */
  deleteSendsOlderThan(windowSeconds: number, take: number): Promise<number> {
    return pruneOlderThan(this.txHost.tx, 'invite_sends', windowSeconds, take);
  }

  private withRelations(query: SelectQueryBuilder<InviteEntity>): SelectQueryBuilder<InviteEntity> {
    return query.innerJoinAndSelect('i.workspace', 'w').innerJoinAndSelect('i.sender', 's');
  }
}
