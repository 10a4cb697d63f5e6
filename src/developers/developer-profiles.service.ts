import { Injectable } from '@nestjs/common';
import type { OwnWorkspaces } from '../auth/authentication-reads';
import { withUuidArray } from '../common/http/uuid';
import { DatabasesService } from '../databases/databases.service';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { WorkspaceResponse } from '../workspaces/workspace.response';
import { WorkspacesService } from '../workspaces/workspaces.service';
import type { DeveloperEntity } from './developer.entity';
import { DeveloperResponse } from './developer.response';
import { DevelopersService } from './developers.service';

/**
 * The `Developer` representation: identity plus the workspaces (and their databases) the developer
 * may access. Seen by another developer, only workspaces both share are shown.
 */
@Injectable()
export class DeveloperProfiles {
  constructor(
    private readonly developers: DevelopersService,
    private readonly workspaces: WorkspacesService,
    private readonly databases: DatabasesService,
  ) {}

  /**
   * The caller's own profile (`/developers/me`) as the JSON document's UTF-8 bytes, from what
   * authentication read (see AuthenticationReads): the same document as `toResponse` would give, with
   * the database ids written straight from PostgreSQL's bytes (they are the bulk of it when a caller
   * sees many databases).
   */
  describeSelf(caller: Pick<DeveloperEntity, 'id' | 'email' | 'kind'>, own: OwnWorkspaces): Buffer {
    const EMPTY_LAST = '[]}'; // `databases`, the last property, as toResponse gives it here
    const withoutIds = JSON.stringify(
      this.toResponse(
        caller,
        own.map((w) => w.workspace),
        [],
      ),
    );
    return withUuidArray(
      withoutIds.slice(0, -EMPTY_LAST.length),
      own.map((w) => w.databaseIds),
      '}',
    );
  }

  /** The members of a workspace, as the caller may see them. */
  async membersOf(workspace: WorkspaceEntity, callerId: string): Promise<DeveloperResponse[]> {
    return this.profiles(await this.workspaces.memberIds(workspace.id), callerId);
  }

  /**
   * Developers already read (an invite's sender, say) as `viewerId` may see them, by id: only the
   * workspaces (and their databases) the viewer shares with each, in two statements whatever their
   * number. A deleted developer may access nothing, so shows no workspace or database.
   */
  async asSeenBy(
    developers: Pick<DeveloperEntity, 'id' | 'email' | 'kind' | 'deleted'>[],
    viewerId: string,
  ): Promise<Map<string, DeveloperResponse>> {
    const distinct = [...new Map(developers.map((d) => [d.id, d])).values()];
    const active = distinct.filter((d) => !d.deleted);
    const seen = await this.profilesOf(active, viewerId);
    const result = new Map(seen.map((p) => [p.id, p]));
    for (const d of distinct) if (d.deleted) result.set(d.id, this.toResponse(d, [], []));
    return result;
  }

  private async profiles(ids: string[], sharedWith?: string): Promise<DeveloperResponse[]> {
    return this.profilesOf(await this.developers.findActiveMany(ids), sharedWith);
  }

  private async profilesOf(
    developers: Pick<DeveloperEntity, 'id' | 'email' | 'kind'>[],
    sharedWith?: string,
  ): Promise<DeveloperResponse[]> {
    const workspaces = await this.workspaces.workspacesOf(
      developers.map((d) => d.id),
      sharedWith,
    );
    const allWorkspaceIds = [...new Set([...workspaces.values()].flat().map((w) => w.id))];
    const databases = await this.databases.idsByWorkspace(allWorkspaceIds);
    return developers.map((d) => {
      const own = workspaces.get(d.id) ?? [];
      return this.toResponse(
        d,
        own,
        own.flatMap((w) => databases.get(w.id) ?? []),
      );
    });
  }

  private toResponse(
    developer: Pick<DeveloperEntity, 'id' | 'email' | 'kind'>,
    workspaces: WorkspaceEntity[],
    databaseIds: string[],
  ): DeveloperResponse {
    return {
      id: developer.id,
      email: developer.email,
      kind: developer.kind,
      workspaces: workspaces.map((w) => WorkspaceResponse.from(w)),
      databases: databaseIds,
    };
  }
}
