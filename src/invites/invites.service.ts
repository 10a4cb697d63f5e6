import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { AuthenticatedDeveloper } from '../auth/authenticated-developer';
import { randomToken, sha256 } from '../common/crypto/tokens';
import { SecretBox } from '../common/crypto/secret-box';
import { ApiException } from '../common/errors/api-exception';
import { isDependencyOutage } from '../common/errors/dependency-outage';
import { ErrorCode } from '../common/errors/error-code';
import { isUniqueViolation } from '../common/errors/unique-violation';
import { escapeHtml } from '../common/http/html';
import { isUuid } from '../common/http/uuid';
import { AppConfig } from '../config/app-config';
import { MetadataTransactions } from '../database/metadata-transactions';
import { pruneInBatches } from '../database/prune-in-batches';
import { untilReachable } from '../database/wait-for-database';
import { DeveloperProfiles } from '../developers/developer-profiles.service';
import { DeveloperKind } from '../developers/developer.entity';
import type { DeveloperResponse } from '../developers/developer.response';
import { DeveloperIdentity, DevelopersService } from '../developers/developers.service';
import { JobDispatcher } from '../queues/job-dispatcher';
import { Reconciler } from '../queues/reconciler';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { WorkspaceResponse } from '../workspaces/workspace.response';
import { WorkspacesService } from '../workspaces/workspaces.service';
import { InviteEntity, InviteState } from './invite.entity';
import { InviteResponse } from './invite.response';
import { InvitesRepository, LeasedInvite, OPEN_STATES } from './invites.repository';
import { Mailer } from './mailer.service';
import { messageOf } from '../common/errors/message-of';

/** Longer than the mailer's connection, greeting and socket timeouts together. */
const EMAIL_LEASE_SECONDS = 120;
/** What is kept of the lease when a sent e-mail's record is retried: it stops that long before the lease ends. */
const RECORD_SENT_MARGIN_MS = 10_000;
/** The window of the invite e-mail limits (INVITES_PER_SENDER_PER_HOUR, INVITES_PER_RECIPIENT_PER_HOUR). */
const SEND_WINDOW_SECONDS = 3600;
/** An invite works only while its sender is a member: removing a member withdraws what they sent. */
const SENDER_GONE = 'This invite was withdrawn: the member who sent it is no longer in the workspace';

/**
 * Invites: EMAIL_PENDING (created; an e-mail is owed) → EMAIL_SENT (the job delivered it) →
 * VERIFIED (accepted). EMAIL_PENDING/EMAIL_SENT read EXPIRED once `expiresAt` has passed.
 * Deleting an invite removes it, so its code stops working; so does removing its sender from the
 * workspace (or deleting their account): an invite is a member's word, and no longer counts once
 * they are out, or a removed member could bring themselves back with a second address.
 */
@Injectable()
export class InvitesService implements OnModuleInit {
  private readonly logger = new Logger(InvitesService.name);
  private mailHostName?: string;
  /** The e-mail lease's condition (the statement's alias `i` is the invite): its sender is still a member. */
  private readonly senderIsMember: string;

  constructor(
    private readonly txHost: MetadataTransactions,
    private readonly invites: InvitesRepository,
    private readonly config: AppConfig,
    private readonly secrets: SecretBox,
    private readonly jobs: JobDispatcher,
    private readonly reconciler: Reconciler,
    private readonly workspaces: WorkspacesService,
    private readonly mailer: Mailer,
    private readonly developers: DevelopersService,
    private readonly profiles: DeveloperProfiles,
  ) {
    this.senderIsMember = workspaces.activeMemberCondition('i.workspace_id', 'i.sender_id');
  }

  onModuleInit(): void {
    this.reconciler.register('invite-emails', () => this.redispatchOwedEmails());
    this.reconciler.register('invite-sends-pruning', () => this.pruneSends());
  }

  async create(
    workspace: WorkspaceEntity,
    sender: AuthenticatedDeveloper,
    input: { email: string; programmatic?: boolean },
  ): Promise<InviteResponse> {
    const email = input.email.trim().toLowerCase();
    const code = randomToken(24);
    const rows = await this.txHost
      .withTransaction(async () => {
        await this.admitEmail(sender.id, email);
        return this.invites.insertUnlessMember(this.workspaces.memberWithEmailCondition('$1', '$2'), {
          workspaceId: workspace.id,
          email,
          senderId: sender.id,
          codeHash: sha256(code),
          codeCiphertext: this.secrets.seal(code),
          expiresAt: new Date(Date.now() + this.config.env.INVITE_TTL_SECONDS * 1000),
        });
      })
      .catch((err: unknown) => {
        if (isUniqueViolation(err)) {
          throw new ApiException(
            ErrorCode.DuplicateEntity,
            `An invite for ${email} to this workspace is already pending`,
          );
        }
        throw err;
      });
    if (!rows[0]) throw new ApiException(ErrorCode.DuplicateEntity, `${email} is already a member of this workspace`);
    const invite = {
      id: rows[0].id,
      workspaceId: workspace.id,
      senderId: sender.id,
      email,
      state: InviteState.EmailPending,
      expiresAt: rows[0].expires_at,
      created: rows[0].created,
      updated: rows[0].updated,
    } as InviteEntity;
    await this.dispatchEmail(invite.id);
    // Seen by its sender, who shares every one of their workspaces with themselves.
    const profile = (await this.profiles.asSeenBy([{ ...sender, deleted: null }], sender.id)).get(sender.id)!;
    const response = this.toResponse({ ...invite, workspace }, profile);
    return input.programmatic ? { ...response, code } : response;
  }

  /**
   * Counts the invite's e-mail against the limits over the last hour (INVITES_PER_SENDER_PER_HOUR
   * per sender, INVITES_PER_RECIPIENT_PER_HOUR per address, whoever sends, and INVITES_PER_HOUR for
   * the whole service), in the context's transaction; the insert that follows in the same
   * transaction records it. The sender's and the address's allowances are counted under their lock,
   * so parallel creates are counted one by one; the service's total under none (a lock of its own
   * would make every invite of the service take turns): creates in flight at the same moment may
   * pass it by as many as they are. Records outlive their invite: deleting an invite gives nothing
   * back (or invite, delete and invite again would mail one address, with the text of a workspace
   * name of the sender's choosing, without end). Over a limit: 429 with `Retry-After`, nothing written.
   */
  private async admitEmail(senderId: string, email: string): Promise<void> {
    const env = this.config.env;
    await this.invites.lockSendAllowance(senderId, email);
    const wait = await this.invites.sendAllowanceWait(senderId, email, {
      perSender: env.INVITES_PER_SENDER_PER_HOUR,
      perRecipient: env.INVITES_PER_RECIPIENT_PER_HOUR,
      total: env.INVITES_PER_HOUR,
      windowSeconds: SEND_WINDOW_SECONDS,
    });
    if (wait.sender !== null) throw this.tooManyEmails('sent by you', wait.sender);
    if (wait.recipient !== null) throw this.tooManyEmails(`sent to ${email}`, wait.recipient);
    if (wait.total !== null) {
      this.logger.warn(
        { limit: env.INVITES_PER_HOUR, retryAfter: wait.total },
        'invite e-mails of the whole service at their hourly limit (INVITES_PER_HOUR): invites refused',
      );
      throw this.tooManyEmails('sent by this service', wait.total);
    }
  }

  private tooManyEmails(which: string, retryAfter: number): ApiException {
    return new ApiException(
      ErrorCode.ThresholdExceeded,
      `Too many invite e-mails ${which} in the last hour; retry in ${retryAfter} seconds`,
      { headers: { 'Retry-After': String(retryAfter) } },
    );
  }

  /**
   * Reconciler task: deletes the records of invite e-mails that have left the limits' window, a
   * batch at a time (at most PRUNE_BATCHES_PER_PASS batches a pass; a backlog takes several); how
   * many it deleted.
   */
  async pruneSends(): Promise<number> {
    const deleted = await pruneInBatches((take) => this.invites.deleteSendsOlderThan(SEND_WINDOW_SECONDS, take));
    if (deleted > 0) this.logger.log({ deleted }, 'invite e-mail records past the limits window pruned');
    return deleted;
  }

  /** The workspace's invites as `viewerId` (a member) sees them: each sender as in the workspace's developer list. */
  async list(workspace: WorkspaceEntity, viewerId: string, state?: InviteState): Promise<InviteResponse[]> {
    const invites = await this.invites.list(workspace.id, state);
    const senders = await this.profiles.asSeenBy(
      invites.map((i) => i.sender!),
      viewerId,
    );
    return invites.map((i) => this.toResponse(i, senders.get(i.senderId)!));
  }

  async delete(workspace: WorkspaceEntity, inviteId: string): Promise<void> {
    const deleted = isUuid(inviteId) ? await this.invites.delete(inviteId, workspace.id) : 0;
    if (!deleted) throw new ApiException(ErrorCode.EntityNotFound, 'Invite not found');
  }

  /** Looks up an invite by its code for the join page (without consuming it). */
  async findByCode(code: string): Promise<InviteEntity> {
    const invite = await this.invites.findByCodeHash(sha256(code));
    if (!invite)
      throw new ApiException(ErrorCode.EntityNotFound, 'Invite not found: the code is wrong or the invite was deleted');
    this.assertUsable(invite);
    if (!(await this.workspaces.isActiveMember(invite.workspaceId, invite.senderId))) {
      throw new ApiException(ErrorCode.BadRequest, SENDER_GONE);
    }
    return invite;
  }

  /**
   * Joins the workspace with an invite code. The caller's e-mail must be the invitee's
   * (case-insensitive). The invite row is locked so a code is used once.
   */
  async accept(developer: Pick<AuthenticatedDeveloper, 'id' | 'email'>, code: string): Promise<WorkspaceResponse> {
    return this.acceptAs(code, () => Promise.resolve(developer));
  }

  /**
   * Creates the invitee's HUMAN account with `password` and joins, in one transaction: if joining
   * fails, no account is left behind.
   */
  acceptAsNewDeveloper(
    code: string,
    password: string,
  ): Promise<{ developer: DeveloperIdentity; workspace: WorkspaceResponse }> {
    let created: DeveloperIdentity | undefined;
    return this.acceptAs(code, async (invite) => {
      created = await this.developers.create({ email: invite.email, kind: DeveloperKind.Human, password });
      return created;
    }).then((workspace) => ({ developer: created!, workspace }));
  }

  private async acceptAs(
    code: string,
    developerFor: (invite: InviteEntity) => Promise<Pick<AuthenticatedDeveloper, 'id' | 'email'>>,
  ): Promise<WorkspaceResponse> {
    const { workspace } = await this.findByCode(code);
    // `developerFor` runs in this transaction, which the context carries.
    return this.txHost.withTransaction(async () => {
      const invite = await this.invites.lockByCodeHash(sha256(code));
      if (!invite) {
        throw new ApiException(
          ErrorCode.EntityNotFound,
          'Invite not found: the code is wrong or the invite was deleted',
        );
      }
      this.assertUsable(invite);
      const developer = await developerFor(invite);
      if (invite.email !== developer.email.toLowerCase()) {
        throw new ApiException(ErrorCode.ForbiddenOperation, 'This invite was sent to another e-mail address');
      }
      if (!(await this.workspaces.addMemberSponsoredBy(invite.workspaceId, developer.id, invite.senderId))) {
        throw new ApiException(ErrorCode.BadRequest, SENDER_GONE);
      }
      await this.invites.markVerified(invite.id, developer.id);
      return WorkspaceResponse.from(workspace!);
    });
  }

  /**
   * The invite e-mail job. No transaction is open while SMTP is spoken: the job takes a lease on
   * the invite (one short UPDATE), sends, then records the outcome (another). A duplicated job finds
   * the lease taken or the e-mail sent and skips. Once the message is out, recording it is retried
   * while the metadata database is away and the lease lasts, the lease kept: only a failed send
   * releases it. A crash mid-send, or an outage outlasting the lease, leaves a lease that runs out,
   * after which the reconciler's job sends again (at least once).
   */
  async deliverEmail(inviteId: string): Promise<'sent' | 'skipped'> {
    // The lease and what the message needs, in one statement. The lease ends no sooner than this
    // clock's reading before it was taken, plus its length.
    const leaseEnds = Date.now() + EMAIL_LEASE_SECONDS * 1000;
    const invite = await this.invites.leaseEmail(inviteId, EMAIL_LEASE_SECONDS, this.senderIsMember);
    if (!invite) return 'skipped';
    await this.sendLeased(inviteId, invite);
    // An invite accepted while its e-mail went out keeps its state. Retried only while the lease
    // lasts: past it, another job could lease the invite and send again.
    await untilReachable(() => this.invites.recordEmailSent(inviteId), {
      waitMs: Math.max(0, leaseEnds - RECORD_SENT_MARGIN_MS - Date.now()),
      retryOn: isDependencyOutage,
      onRetry: (err, delayMs) =>
        this.logger.warn(
          { inviteId, err: messageOf(err), delayMs },
          'invite e-mail sent; recording it waits for the metadata database',
        ),
    });
    return 'sent';
  }

  /** Sends the leased invite's e-mail; a failure is recorded (the lease released) and thrown. */
  private async sendLeased(inviteId: string, invite: LeasedInvite): Promise<void> {
    try {
      const code = this.secrets.open(invite.code_ciphertext);
      const link = `${this.config.publicUrl}/invites/accept?code=${encodeURIComponent(code)}&proof=${this.emailProof(code)}`;
      const workspaceName = invite.workspace_name;
      const expires = invite.expires_at.toISOString();
      await this.mailer.send({
        to: invite.email,
        subject: `You are invited to join ${workspaceName}`,
        text: `${invite.sender_email} invited you to the workspace "${workspaceName}".\n\nJoin: ${link}\n\nThe invite expires on ${expires}.\n`,
        html: `<p>${escapeHtml(invite.sender_email)} invited you to the workspace <strong>${escapeHtml(workspaceName)}</strong>.</p><p><a href="${escapeHtml(link)}">Join ${escapeHtml(workspaceName)}</a></p><p>The invite expires on ${expires}.</p>`,
        messageId: `<invite-${inviteId}@${this.mailHost}>`,
      });
    } catch (err) {
      const message = messageOf(err);
      await this.invites.recordEmailFailure(inviteId, `${ErrorCode.EmailSendFailure}: ${message}`.slice(0, 1000));
      this.logger.warn(
        { inviteId, errorCode: ErrorCode.EmailSendFailure, err: message },
        'invite e-mail not sent; will retry',
      );
      throw err;
    }
  }

  /**
   * What the e-mailed link carries besides the code: proof that its holder received the invitation
   * e-mail. A programmatic invite hands the bare code to the inviter, so the code alone must not be
   * enough to create an account for the invitee's address.
   */
  emailProof(code: string): string {
    return this.secrets.mac('invite-email', code);
  }

  hasEmailProof(code: string, proof: string | undefined): boolean {
    return !!proof && this.secrets.verifyMac('invite-email', code, proof);
  }

  private get mailHost(): string {
    return (this.mailHostName ??= new URL(this.config.publicUrl).hostname);
  }

  private dispatchEmail(inviteId: string, redispatch = false): Promise<boolean> {
    const options = { jobId: `invite-email:${inviteId}` };
    return redispatch
      ? this.jobs.redispatch('SendInviteEmail', { inviteId }, options)
      : this.jobs.dispatch('SendInviteEmail', { inviteId }, options);
  }

  /** Reconciler task: every invite still owed an e-mail gets its job back (a lost or exhausted job). */
  private async redispatchOwedEmails(): Promise<void> {
    for (const id of await this.invites.owedEmailIds(this.senderIsMember)) await this.dispatchEmail(id, true);
  }

  private assertUsable(invite: InviteEntity): void {
    if (invite.state === InviteState.Verified)
      throw new ApiException(ErrorCode.BadRequest, 'This invite has already been used');
    if (invite.state === InviteState.Expired || invite.expiresAt.getTime() <= Date.now()) {
      throw new ApiException(ErrorCode.BadRequest, 'This invite has expired; ask for a new one');
    }
  }

  private toResponse(invite: InviteEntity, sender: DeveloperResponse): InviteResponse {
    const expired = OPEN_STATES.includes(invite.state) && invite.expiresAt.getTime() <= Date.now();
    return {
      id: invite.id,
      sender,
      email: invite.email,
      workspace: WorkspaceResponse.from(invite.workspace!),
      verificationState: expired ? InviteState.Expired : invite.state,
      created: invite.created,
      updated: invite.updated,
    };
  }
}
