import { Injectable } from '@nestjs/common';

/** A workspace's live database ids as read at one `databases_version` (16 bytes an id). */
export interface RememberedIds {
  version: string;
  ids: Uint8Array;
}

/** Fewer ids than this (16 KiB of them) are read again each time: aggregating them costs little. */
export const MIN_REMEMBERED_IDS = 1024;
/** At most this many workspaces are remembered, the least recently used leaving first… */
export const MAX_REMEMBERED_WORKSPACES = 64;
/** …and at most this many bytes of ids in all (32 MiB: 2M ids; a 100k workspace takes 1.6 MB). */
export const MAX_REMEMBERED_BYTES = 32 * 1024 * 1024;

/**
 * The live database ids of the big workspaces `/developers/me` recently answered for, each with the
 * workspace's `databases_version` it was read at. The request's one statement is sent what is
 * remembered and aggregates a workspace's ids only when its version has moved since (a trigger moves
 * it with every committed change to that set: migration WorkspaceDatabasesVersion), so what is served
 * from here is always what PostgreSQL would have given, on every replica: nothing needs telling when
 * another process creates or deletes a database. At 100k ids the aggregate was most of the request's
 * time (see the README's Performance section).
 */
@Injectable()
export class DatabaseIdsCache {
  private readonly byWorkspace = new Map<string, RememberedIds>();
  private bytes = 0;
  /** Workspaces' ids served, by where they came from (for the operations metrics). */
  readonly served = { aggregated: 0, remembered: 0 };

  /** What is held now (for the operations metrics). */
  get held(): { workspaces: number; bytes: number } {
    return { workspaces: this.byWorkspace.size, bytes: this.bytes };
  }

  /** What is remembered now: what a statement is sent, and what its answer is read against. */
  snapshot(): ReadonlyMap<string, RememberedIds> {
    return new Map(this.byWorkspace);
  }

  /** The ids from `snapshot` that a statement found current (it sent no ids back): marks them used. */
  reuse(workspaceId: string, remembered: RememberedIds): Uint8Array {
    this.served.remembered++;
    if (this.byWorkspace.get(workspaceId) === remembered) {
      this.byWorkspace.delete(workspaceId);
      this.byWorkspace.set(workspaceId, remembered);
    }
    return remembered.ids;
  }

  /** Ids a statement aggregated at `version` (any number): remembered when there are enough to be worth it. */
  remember(workspaceId: string, version: string, ids: Uint8Array): void {
    this.served.aggregated++;
    if (ids.length < MIN_REMEMBERED_IDS * 16 || ids.length > MAX_REMEMBERED_BYTES) return;
    const previous = this.byWorkspace.get(workspaceId);
    if (previous && BigInt(previous.version) > BigInt(version)) return; // a newer read got there first
    this.forget(workspaceId);
    this.byWorkspace.set(workspaceId, { version, ids });
    this.bytes += ids.length;
    for (const [oldest] of this.byWorkspace) {
      if (this.bytes <= MAX_REMEMBERED_BYTES && this.byWorkspace.size <= MAX_REMEMBERED_WORKSPACES) break;
      this.forget(oldest);
    }
  }

  private forget(workspaceId: string): void {
    const entry = this.byWorkspace.get(workspaceId);
    if (!entry) return;
    this.bytes -= entry.ids.length;
    this.byWorkspace.delete(workspaceId);
  }
}
