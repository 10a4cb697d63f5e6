import { Injectable } from '@nestjs/common';

/**
 * How long a server that did not answer stays out of placement's first choice when nothing is
 * heard of it since (no call, no ping): it is then given the benefit of the doubt again.
 */
export const UNANSWERED_FOR_MS = 30_000;
/** How old this process's news of a server may get before placement has it asked again (in the background). */
export const ASK_AGAIN_AFTER_MS = 5_000;

interface News {
  answered: boolean;
  at: number;
  /** When the call that brought it began: news of a call begun earlier never replaces it. */
  askedAt: number;
  /** Why it did not answer (the failure's message), when known. */
  reason?: string;
}

/**
 * What this process last heard from each data-plane server: whether its latest call there (any
 * DataPlane call, a readiness ping, a telemetry pass) got an answer, or failed for want of one (see
 * isUnavailability). Placement prefers the servers that answer (see Placement.candidates), so a
 * server that is down costs the requests for databases on it, not every new database of its region.
 *
 * Per process, in memory: each API replica and worker keeps its own view, fed by its own calls and
 * by the pings placement has it make (DataPlane.askInBackground), so replicas may disagree for a few
 * seconds. Nothing is shared through the metadata database: a wrong guess costs one database placed
 * on a server that is down (it is built when the server answers again) or one placed on another
 * server with room; it never breaks anything.
 */
@Injectable()
export class ServerAnswers {
  private readonly news = new Map<string, News>();
  private readonly asking = new Set<string>();

  /** The server answered (a call begun at `askedAt` succeeded, or was refused on its merits). */
  answered(serverId: string, askedAt = Date.now()): void {
    this.record(serverId, { answered: true, at: Date.now(), askedAt });
  }

  /**
   * The server did not answer a call begun at `askedAt` (connect timeout, our statement timeouts,
   * refused logins…), and why.
   */
  unanswered(serverId: string, reason?: string, askedAt = Date.now()): void {
    this.record(serverId, { answered: false, at: Date.now(), askedAt, reason });
  }

  /**
   * Keeps the news of the call begun last: a slow call begun before the server came back (or went
   * away), ending after a later call's news, would otherwise undo it (a healthy server second
   * choice for UNANSWERED_FOR_MS).
   */
  private record(serverId: string, news: News): void {
    const known = this.news.get(serverId);
    if (!known || known.askedAt <= news.askedAt) this.news.set(serverId, news);
  }

  /** Why the server last did not answer, when that is the latest news of it and its reason is known. */
  lastFailure(serverId: string): string | undefined {
    const news = this.news.get(serverId);
    return news && !news.answered ? news.reason : undefined;
  }

  /**
   * Whether the server is to be counted as answering: unless the latest news of it is that it did
   * not, less than UNANSWERED_FOR_MS ago. A server never heard of answers, as far as this process knows.
   */
  answering(serverId: string, now = Date.now()): boolean {
    const news = this.news.get(serverId);
    return !news || news.answered || now - news.at >= UNANSWERED_FOR_MS;
  }

  /**
   * Whether to ask the server now (no news of it, or news older than ASK_AGAIN_AFTER_MS, and no
   * question already out): if so the question is this caller's, until doneAsking.
   */
  startAsking(serverId: string, now = Date.now()): boolean {
    if (this.asking.has(serverId)) return false;
    const news = this.news.get(serverId);
    if (news && now - news.at < ASK_AGAIN_AFTER_MS) return false;
    this.asking.add(serverId);
    return true;
  }

  doneAsking(serverId: string): void {
    this.asking.delete(serverId);
  }

  /** Forgets a removed server. */
  forget(serverId: string): void {
    this.news.delete(serverId);
  }
}
