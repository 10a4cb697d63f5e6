import { CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { DeveloperEntity } from '../developers/developer.entity';
import { WorkspaceEntity } from './workspace.entity';

@Entity('workspace_members')
export class WorkspaceMemberEntity {
  @PrimaryColumn({ name: 'workspace_id', type: 'uuid' })
  workspaceId!: string;

  @Index()
  @PrimaryColumn({ name: 'developer_id', type: 'uuid' })
  developerId!: string;

  @ManyToOne(() => WorkspaceEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'workspace_id' })
  workspace?: WorkspaceEntity;

  @ManyToOne(() => DeveloperEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'developer_id' })
  developer?: DeveloperEntity;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;
}
