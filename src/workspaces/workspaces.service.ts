import { Injectable } from '@nestjs/common';
import { AuthenticatedDeveloper } from '../auth/authenticated-developer';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { AppConfig } from '../config/app-config';
import { MetadataTransactions } from '../database/metadata-transactions';
import { DeveloperKind } from '../developers/developer.entity';
import { slugify } from './slug';
import type { WorkspaceEntity } from './workspace.entity';
import { WorkspacesRepository } from './workspaces.repository';

/** Outside what slugify makes ([a-z0-9_-]) and what the membership guard looks up. */
const HOLDING_SLUG = '~unclaimed';

@Injectable()
export class WorkspacesService {
  constructor(
    private readonly txHost: MetadataTransactions,
    private readonly workspaces: WorkspacesRepository,
    private readonly config: AppConfig,
  ) {}

  /** Creates a workspace and makes the creator its first member, in one transaction. */
  async create(creator: AuthenticatedDeveloper, name: string): Promise<WorkspaceEntity> {
    if (creator.kind !== DeveloperKind.Human) {
      throw new ApiException(ErrorCode.ForbiddenOperation, 'API developers may not create workspaces');
    }
    const trimmed = name.trim();
    const slug = slugify(trimmed);
    if (!slug) throw new ApiException(ErrorCode.BadRequest, 'name must contain at least one ASCII letter or digit');
    // A taken slug fails the unique constraint, which the error filter answers with 409 naming it.
    return this.txHost.withTransaction(async () => {
      // One developer's creates take turns, so parallel ones never pass the bound together.
      await this.workspaces.lockCreatesOf(creator.id);
      const max = this.config.env.WORKSPACES_PER_DEVELOPER;
      if ((await this.workspaces.countMemberships(creator.id)) >= max) {
        throw new ApiException(
          ErrorCode.ThresholdExceeded,
          `A developer may belong to at most ${max} workspaces; leave one that has other members, or ask the operator to raise WORKSPACES_PER_DEVELOPER`,
          { status: 403 },
        );
      }
      const workspace = await this.workspaces.save({ name: trimmed, slug });
      await this.workspaces.addMember(workspace.id, creator.id);
      return workspace;
    });
  }

  /**
   * The workspace that holds instant databases until they are claimed. It has no members, and its
   * slug has a character no workspace slug can have, so no path reaches it. Made on first use.
   */
  holdingWorkspace(): Promise<WorkspaceEntity> {
    return this.workspaces.findOrCreateBySlug(HOLDING_SLUG, 'Unclaimed instant databases');
  }

  /** Workspaces the developer belongs to, oldest first. */
  listForMember(developerId: string): Promise<WorkspaceEntity[]> {
    return this.workspaces.listForMember(developerId);
  }

  /**
   * The workspace with that slug if the developer is a member of it; null otherwise (also when it
   * does not exist). On every workspace-scoped request: one indexed statement, raw rows.
   */
  findForMember(slug: string, developerId: string): Promise<WorkspaceEntity | null> {
    return this.workspaces.findForMember(slug.toLowerCase(), developerId);
  }

  isMember(workspaceId: string, developerId: string): Promise<boolean> {
    return this.workspaces.isMember(workspaceId, developerId);
  }

  /**
   * An SQL condition, true when a developer with the (lower-cased) e-mail address in parameter
   * `emailParam` is a member of the workspace whose id is in `workspaceIdParam`: for a statement of
   * another module that must check it in the same round trip (the invite create).
   */
  memberWithEmailCondition(workspaceIdParam: string, emailParam: string): string {
    return this.workspaces.memberWithEmailCondition(workspaceIdParam, emailParam);
  }

  /**
   * An SQL condition, true when the developer whose id is `developerIdExpr` is a member of the
   * workspace whose id is `workspaceIdExpr` and their account is not deleted: for a statement of
   * another module that must check it in the same round trip (an invite's e-mail, owed only while
   * its sender is a member).
   */
  activeMemberCondition(workspaceIdExpr: string, developerIdExpr: string): string {
    return this.workspaces.activeMemberCondition(workspaceIdExpr, developerIdExpr);
  }

  /** Whether the developer is a member of the workspace and their account is not deleted. */
  isActiveMember(workspaceId: string, developerId: string): Promise<boolean> {
    return this.workspaces.isActiveMember(workspaceId, developerId);
  }

  /**
   * Adds a member on an existing member's word (an invite's sender), in the transaction the context
   * carries: under the workspace's row lock, which a removal takes too, and only while `sponsorId`
   * is still an active member, so a member removed meanwhile can bring nobody in. False, and
   * nothing added, when the sponsor is not.
   */
  async addMemberSponsoredBy(workspaceId: string, developerId: string, sponsorId: string): Promise<boolean> {
    await this.workspaces.lock(workspaceId);
    if (!(await this.workspaces.isActiveMember(workspaceId, sponsorId))) return false;
    await this.workspaces.addMember(workspaceId, developerId);
    return true;
  }

  /** Ids of the workspace's members, in the order they joined. */
  memberIds(workspaceId: string): Promise<string[]> {
    return this.workspaces.memberIds(workspaceId);
  }

  /** Adds a member (a no-op when already a member), in the transaction the context carries, if any. */
  addMember(workspaceId: string, developerId: string): Promise<void> {
    return this.workspaces.addMember(workspaceId, developerId);
  }

  /**
   * Removes a member at `callerId`'s request; access ends with this commit (the guard reads
   * membership on every request). The workspace row is locked so two concurrent removals cannot
   * leave it without members, and the caller must still be an active member under that lock: one
   * removed while their own request waited for its turn removes nobody (403).
   */
  async removeMember(workspace: WorkspaceEntity, developerId: string, callerId: string): Promise<void> {
    await this.txHost.withTransaction(async () => {
      await this.workspaces.lock(workspace.id);
      if (!(await this.workspaces.isActiveMember(workspace.id, callerId))) {
        throw new ApiException(ErrorCode.UnauthorizedWorkspaceAccess, 'You do not have access to this workspace');
      }
      if (!(await this.workspaces.isMember(workspace.id, developerId))) {
        throw new ApiException(ErrorCode.EntityNotFound, 'No such developer in this workspace');
      }
      const others = await this.workspaces.countOtherActiveMembers(workspace.id, developerId);
      // Deleted developers do not count: they can no longer use the workspace.
      if (others === 0) {
        throw new ApiException(ErrorCode.ForbiddenOperation, 'The last member of a workspace cannot be removed');
      }
      await this.workspaces.removeMember(workspace.id, developerId);
    });
  }

  /**
   * For each developer, the workspaces they belong to; with `sharedWith`, only those that developer
   * is a member of too (so a listing never reveals other workspaces).
   */
  async workspacesOf(developerIds: string[], sharedWith?: string): Promise<Map<string, WorkspaceEntity[]>> {
    const result = new Map<string, WorkspaceEntity[]>(developerIds.map((id) => [id, []]));
    if (!developerIds.length) return result;
    // On every /developers/me: one indexed statement, raw rows.
    for (const { memberId, workspace } of await this.workspaces.workspacesOf(developerIds, sharedWith)) {
      result.get(memberId)?.push(workspace);
    }
    return result;
  }
}
