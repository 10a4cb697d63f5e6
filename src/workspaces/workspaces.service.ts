import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, Repository } from 'typeorm';
import { AuthenticatedDeveloper } from '../auth/authenticated-developer';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { DeveloperKind } from '../developers/developer.entity';
import { readRows } from '../database/hot-query';
import { slugify } from './slug';
import { toWorkspace, type WorkspaceRow } from './workspace-rows';
import { WorkspaceMemberEntity } from './workspace-member.entity';
import { WorkspaceEntity } from './workspace.entity';

/** Outside what slugify makes ([a-z0-9_-]) and what the membership guard looks up. */
const HOLDING_SLUG = '~unclaimed';

@Injectable()
export class WorkspacesService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(WorkspaceEntity) private readonly workspaces: Repository<WorkspaceEntity>,
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
    return this.dataSource.transaction(async (tx) => {
      const workspace = await tx
        .getRepository(WorkspaceEntity)
        .save(tx.getRepository(WorkspaceEntity).create({ name: trimmed, slug }));
      await tx.getRepository(WorkspaceMemberEntity).insert({ workspaceId: workspace.id, developerId: creator.id });
      return workspace;
    });
  }

  /**
   * The workspace that holds instant databases until they are claimed. It has no members, and its
   * slug has a character no workspace slug can have, so no path reaches it. Made on first use.
   */
  async holdingWorkspace(): Promise<WorkspaceEntity> {
    await this.workspaces
      .createQueryBuilder()
      .insert()
      .values({ name: 'Unclaimed instant databases', slug: HOLDING_SLUG })
      .orIgnore()
      .execute();
    return this.workspaces.findOneByOrFail({ slug: HOLDING_SLUG });
  }

  /** Workspaces the developer belongs to, oldest first. */
  listForMember(developerId: string): Promise<WorkspaceEntity[]> {
    return this.workspaces
      .createQueryBuilder('w')
      .innerJoin(WorkspaceMemberEntity, 'm', 'm.workspace_id = w.id AND m.developer_id = :developerId', { developerId })
      .orderBy('w.created', 'ASC')
      .addOrderBy('w.id', 'ASC')
      .getMany();
  }

  /**
   * The workspace with that slug if the developer is a member of it; null otherwise (also when it
   * does not exist). On every workspace-scoped request: one indexed statement, raw rows.
   */
  async findForMember(slug: string, developerId: string): Promise<WorkspaceEntity | null> {
    const rows = await readRows<WorkspaceRow>(
      this.dataSource,
      `SELECT w.id, w.name, w.slug, w.billing_customer_id, w.created
         FROM workspaces w JOIN workspace_members m ON m.workspace_id = w.id AND m.developer_id = $1
        WHERE w.slug = $2`,
      [developerId, slug.toLowerCase()],
    );
    return rows[0] ? toWorkspace(rows[0]) : null;
  }

  isMember(workspaceId: string, developerId: string): Promise<boolean> {
    return this.dataSource.getRepository(WorkspaceMemberEntity).existsBy({ workspaceId, developerId });
  }

  /**
   * An SQL condition, true when a developer with the (lower-cased) e-mail address in parameter
   * `emailParam` is a member of the workspace whose id is in `workspaceIdParam`: for a statement of
   * another module that must check it in the same round trip (the invite create).
   */
  memberWithEmailCondition(workspaceIdParam: string, emailParam: string): string {
    return `EXISTS (SELECT 1 FROM workspace_members m JOIN developers d ON d.id = m.developer_id
                     WHERE m.workspace_id = ${workspaceIdParam} AND d.email = ${emailParam} AND d.deleted IS NULL)`;
  }

  /** Ids of the workspace's members, in the order they joined. */
  async memberIds(workspaceId: string): Promise<string[]> {
    const rows = await this.dataSource
      .getRepository(WorkspaceMemberEntity)
      .find({ select: { developerId: true }, where: { workspaceId }, order: { created: 'ASC', developerId: 'ASC' } });
    return rows.map((r) => r.developerId);
  }

  /** Adds a member (a no-op when already a member), inside the caller's transaction when given. */
  async addMember(
    workspaceId: string,
    developerId: string,
    manager: EntityManager = this.dataSource.manager,
  ): Promise<void> {
    await manager
      .createQueryBuilder()
      .insert()
      .into(WorkspaceMemberEntity)
      .values({ workspaceId, developerId })
      .orIgnore()
      .execute();
  }

  /**
   * Removes a member; access ends with this commit (the guard reads membership on every request).
   * The workspace row is locked so two concurrent removals cannot leave it without members.
   */
  async removeMember(workspace: WorkspaceEntity, developerId: string): Promise<void> {
    await this.dataSource.transaction(async (tx) => {
      await tx
        .getRepository(WorkspaceEntity)
        .createQueryBuilder('w')
        .setLock('pessimistic_write')
        .where({ id: workspace.id })
        .getOne();
      const members = tx.getRepository(WorkspaceMemberEntity);
      if (!(await members.existsBy({ workspaceId: workspace.id, developerId }))) {
        throw new ApiException(ErrorCode.EntityNotFound, 'No such developer in this workspace');
      }
      const others = await members
        .createQueryBuilder('m')
        .innerJoin('m.developer', 'd')
        .where('m.workspace_id = :workspaceId AND m.developer_id <> :developerId AND d.deleted IS NULL', {
          workspaceId: workspace.id,
          developerId,
        })
        .getCount();
      // Deleted developers do not count: they can no longer use the workspace.
      if (others === 0) {
        throw new ApiException(ErrorCode.ForbiddenOperation, 'The last member of a workspace cannot be removed');
      }
      await members.delete({ workspaceId: workspace.id, developerId });
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
    const rows = await readRows<WorkspaceRow & { member_id: string }>(
      this.dataSource,
      `SELECT m.developer_id AS member_id, w.id, w.name, w.slug, w.billing_customer_id, w.created
         FROM workspace_members m JOIN workspaces w ON w.id = m.workspace_id
        WHERE m.developer_id = ANY($1::uuid[])${
          sharedWith
            ? ' AND EXISTS (SELECT 1 FROM workspace_members s WHERE s.workspace_id = w.id AND s.developer_id = $2)'
            : ''
        }
        ORDER BY w.created ASC, w.id ASC`,
      sharedWith ? [developerIds, sharedWith] : [developerIds],
    );
    for (const row of rows) result.get(row.member_id)?.push(toWorkspace(row));
    return result;
  }
}
