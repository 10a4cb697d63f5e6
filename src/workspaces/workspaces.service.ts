import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import { AuthenticatedDeveloper } from '../auth/authenticated-developer';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { DeveloperKind } from '../developers/developer.entity';
import { slugify } from './slug';
import { WorkspaceMemberEntity } from './workspace-member.entity';
import { WorkspaceEntity } from './workspace.entity';

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

  /** Workspaces the developer belongs to, oldest first. */
  listForMember(developerId: string): Promise<WorkspaceEntity[]> {
    return this.workspaces
      .createQueryBuilder('w')
      .innerJoin(WorkspaceMemberEntity, 'm', 'm.workspace_id = w.id AND m.developer_id = :developerId', { developerId })
      .orderBy('w.created', 'ASC')
      .addOrderBy('w.id', 'ASC')
      .getMany();
  }

  /** The workspace with that slug if the developer is a member of it; null otherwise (also when it does not exist). */
  findForMember(slug: string, developerId: string): Promise<WorkspaceEntity | null> {
    return this.workspaces
      .createQueryBuilder('w')
      .innerJoin(WorkspaceMemberEntity, 'm', 'm.workspace_id = w.id AND m.developer_id = :developerId', { developerId })
      .where('w.slug = :slug', { slug: slug.toLowerCase() })
      .getOne();
  }
}
