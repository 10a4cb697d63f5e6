import { OnQueueFailed, Process, Processor } from '@nestjs/bull';
import { Logger } from '@nestjs/common';
import type { Job } from 'bull';
import { ErrorCode } from '../common/errors/error-code';
import { Queues } from '../queues/queue-names';
import { SEND_INVITE_EMAIL } from './invite-jobs';
import { InvitesService } from './invites.service';

@Processor(Queues.InviteEmail)
export class InviteEmailProcessor {
  private readonly logger = new Logger(InviteEmailProcessor.name);

  constructor(private readonly invites: InvitesService) {}

  /** Sends run outside any transaction, so a few at once keep a slow SMTP server from queueing the rest. */
  @Process({ name: SEND_INVITE_EMAIL, concurrency: 4 })
  send(job: Job<{ inviteId: string }>): Promise<'sent' | 'skipped'> {
    return this.invites.deliverEmail(job.data.inviteId);
  }

  @OnQueueFailed()
  onFailed(job: Job<{ inviteId: string }>, err: Error): void {
    if (job.attemptsMade >= (job.opts.attempts ?? 1)) {
      this.logger.error(
        { inviteId: job.data.inviteId, errorCode: ErrorCode.EmailSendFailure, err: err.message },
        'invite e-mail retries exhausted; the reconciler will try again later',
      );
    }
  }
}
