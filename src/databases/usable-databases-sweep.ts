import type { Logger } from '@nestjs/common';
import { messageOf } from '../common/errors/message-of';
import { UnansweringServers } from '../data-plane/unanswering-servers';

/** Where a sweep reads the fleet's usable databases (DatabasesRepository, or DatabasesService's mapped rows). */
export interface UsableDatabases<T> {
  serversWithUsable(): Promise<string[]>;
  usableOnServer(serverId: string): Promise<T[]>;
}

/**
 * One reconcile pass over the usable databases (READY, not finalized) of every server that has
 * any, `batchSize` at a time, oldest first: `work` gets a server and a batch of its databases. A
 * batch that fails is logged (`could not run <what>; will retry`) and, when the server did not
 * answer, the rest of that server waits for the next pass (UnansweringServers, reported at the end).
 */
export async function sweepUsableDatabases<T>(
  source: UsableDatabases<T>,
  logger: Logger,
  what: string,
  batchSize: number,
  work: (serverId: string, batch: T[]) => Promise<void>,
): Promise<void> {
  const unanswering = new UnansweringServers(logger, what);
  for (const serverId of await source.serversWithUsable()) {
    const usable = await source.usableOnServer(serverId);
    for (let from = 0; from < usable.length && !unanswering.skip(serverId); from += batchSize) {
      try {
        await work(serverId, usable.slice(from, from + batchSize));
      } catch (err) {
        unanswering.note(serverId, err);
        logger.error({ serverId, err: messageOf(err) }, `could not run ${what}; will retry`);
      }
    }
  }
  unanswering.report();
}
