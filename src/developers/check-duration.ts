/**
 * How long checking a password at today's parameters takes in this process: a moving average of the
 * checks seen (unknown e-mails' decoy included). A refusal at a hash with older, cheaper parameters
 * waits out the rest of it, so it takes as long as one at today's (neither shorter, which would tell
 * such accounts apart, nor a whole check longer).
 */
export class CheckDuration {
  private averageMs: number | undefined;

  record(ms: number): void {
    this.averageMs = this.averageMs === undefined ? ms : this.averageMs * 0.8 + ms * 0.2;
  }

  /** How much longer a check that took `elapsedMs` should last; undefined before any check was seen. */
  remaining(elapsedMs: number): number | undefined {
    return this.averageMs === undefined ? undefined : Math.max(0, this.averageMs - elapsedMs);
  }
}
