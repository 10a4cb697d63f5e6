import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type Repository } from 'typeorm';
import { type PreparedRead, readRows } from '../database/hot-query';
import { MetadataTransactions } from '../database/metadata-transactions';
import { lockForContextTransaction } from '../database/transaction-lock';
import { toWorkspace, type WorkspaceRow } from './workspace-rows';
import { WorkspaceMemberEntity } from './workspace-member.entity';
import { WorkspaceEntity } from './workspace.entity';

/** findForMember's statement, kept prepared on each pool connection (PreparedRead). */
const WORKSPACE_FOR_MEMBER: PreparedRead = {
  name: 'workspace_for_member',
  text: `SELECT w.id, w.name, w.slug, w.billing_customer_id, w.created
           FROM workspaces w JOIN workspace_members m ON m.workspace_id = w.id AND m.developer_id = $1
          WHERE w.slug = $2`,
};

/**
 * Every statement on `workspaces` and `workspace_members` (habit 15). Statements go through the
 * transaction the context carries (MetadataTransactions): inside its withTransaction they join it,
 * outside they run on their own; the raw hot reads run on the pool itself (readRows).
 */
@Injectable()
export class WorkspacesRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly txHost: MetadataTransactions,
  ) {}

  private get workspaces(): Repository<WorkspaceEntity> {
    return this.txHost.tx.getRepository(WorkspaceEntity);
  }

  private get members(): Repository<WorkspaceMemberEntity> {
    return this.txHost.tx.getRepository(WorkspaceMemberEntity);
  }

  save(row: Partial<WorkspaceEntity>): Promise<WorkspaceEntity> {
    return this.workspaces.save(this.workspaces.create(row));
  }

  /** Creates the workspace with this slug unless one exists, then reads it. */
  async findOrCreateBySlug(slug: string, name: string): Promise<WorkspaceEntity> {
    await this.workspaces.createQueryBuilder().insert().values({ name, slug }).orIgnore().execute();
    return this.workspaces.findOneByOrFail({ slug });
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
   * The workspace with that (lower-cased) slug if the developer is a member of it. On every
   * workspace-scoped request: one indexed statement, raw rows on the pool.
   */
  async findForMember(slug: string, developerId: string): Promise<WorkspaceEntity | null> {
    const rows = await readRows<WorkspaceRow>(this.dataSource, WORKSPACE_FOR_MEMBER, [developerId, slug]);
    return rows[0] ? toWorkspace(rows[0]) : null;
  }

  /** Locks the workspace row (FOR UPDATE) for the rest of the context's transaction (refused outside one). */
  async lock(id: string): Promise<void> {
    await this.txHost.rowLocking(WorkspaceEntity, 'w', 'a workspace row lock').where({ id }).getOne();
  }

  isMember(workspaceId: string, developerId: string): Promise<boolean> {
    return this.members.existsBy({ workspaceId, developerId });
  }

  /** See WorkspacesService.activeMemberCondition. */
  activeMemberCondition(workspaceIdExpr: string, developerIdExpr: string): string {
    return `EXISTS (SELECT 1 FROM workspace_members m JOIN developers d ON d.id = m.developer_id
                     WHERE m.workspace_id = ${workspaceIdExpr} AND m.developer_id = ${developerIdExpr}
                       AND d.deleted IS NULL)`;
  }

  /** A member whose account is not deleted. */
  async isActiveMember(workspaceId: string, developerId: string): Promise<boolean> {
    const [row] = await this.txHost.tx.query<{ active: boolean }[]>(
      `SELECT ${this.activeMemberCondition('$1', '$2')} AS active`,
      [workspaceId, developerId],
    );
    return row.active;
  }

  /** See WorkspacesService.memberWithEmailCondition. */
  memberWithEmailCondition(workspaceIdParam: string, emailParam: string): string {
    return `EXISTS (SELECT 1 FROM workspace_members m JOIN developers d ON d.id = m.developer_id
                     WHERE m.workspace_id = ${workspaceIdParam} AND d.email = ${emailParam} AND d.deleted IS NULL)`;
  }

  /** Ids of the workspace's members, in the order they joined. */
  async memberIds(workspaceId: string): Promise<string[]> {
    const rows = await this.members.find({
      select: { developerId: true },
      where: { workspaceId },
      order: { created: 'ASC', developerId: 'ASC' },
    });
    return rows.map((r) => r.developerId);
  }

  /** Takes the turn of the developer's workspace creates for the rest of the context's transaction. */
  lockCreatesOf(developerId: string): Promise<void> {
    return lockForContextTransaction(this.txHost, `workspace-creates:${developerId}`);
  }

  /** How many workspaces the developer belongs to. */
  countMemberships(developerId: string): Promise<number> {
    return this.members.countBy({ developerId });
  }

  /** Adds a member; a no-op when already a member. */
  async addMember(workspaceId: string, developerId: string): Promise<void> {
    await this.members.createQueryBuilder().insert().values({ workspaceId, developerId }).orIgnore().execute();
  }

  /** Members of the workspace other than `developerId` who are not deleted. */
  countOtherActiveMembers(workspaceId: string, developerId: string): Promise<number> {
    return this.members
      .createQueryBuilder('m')
      .innerJoin('m.developer', 'd')
      .where('m.workspace_id = :workspaceId AND m.developer_id <> :developerId AND d.deleted IS NULL', {
        workspaceId,
        developerId,
      })
      .getCount();
  }

  async removeMember(workspaceId: string, developerId: string): Promise<void> {
    await this.members.delete({ workspaceId, developerId });
  }

  /**
   * Each developer's workspaces (with `sharedWith`, only those that developer is a member of too),
   * oldest first. On every /developers/me: one indexed statement, raw rows on the pool.
   */
  async workspacesOf(
    developerIds: string[],
    sharedWith?: string,
  ): Promise<{ memberId: string; workspace: WorkspaceEntity }[]> {
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
    return rows.map((row) => ({ memberId: row.member_id, workspace: toWorkspace(row) }));
  }
}
