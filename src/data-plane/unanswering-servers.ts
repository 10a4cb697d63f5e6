import type { Logger } from '@nestjs/common';
import { DataPlaneError } from './data-plane.service';

/**
 * The data-plane servers one reconcile sweep found not answering (a call failed for want of an
 * answer: the connect timeout, or our statement timeouts). The sweep makes no more calls there in
 * its pass and leaves that server's work to the next one, instead of each piece of work waiting the
 * timeout out in turn; `report` logs how much waits.
 */
export class UnansweringServers {
  private readonly skipped = new Map<string, number>();

  constructor(
    private readonly logger: Logger,
    /** What waits, for the log line ("deletions", "credential work"). */
    private readonly work: string,
  ) {}

  /** Whether work on this server is to be left to the next pass (then counted as such). */
  skip(serverId: string | null | undefined): boolean {
    const skipped = serverId ? this.skipped.get(serverId) : undefined;
    if (skipped === undefined) return false;
    this.skipped.set(serverId!, skipped + 1);
    return true;
  }

  /** Notes the server when `err` says it did not answer (one full database does not say so). */
  note(serverId: string | null | undefined, err: unknown): void {
    if (!serverId || this.skipped.has(serverId) || !(err instanceof DataPlaneError) || !err.serverUnanswered) return;
    this.skipped.set(serverId, 0);
  }

  /** Logs, for each server found not answering, how much of the sweep's work waits for the next pass. */
  report(): void {
    for (const [serverId, skipped] of this.skipped) {
      this.logger.warn(
        { serverId, skipped },
        `data-plane server not answering: the rest of its ${this.work} waits for the next pass`,
      );
    }
  }
}
