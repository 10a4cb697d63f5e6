import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { DeveloperEntity } from '../../developers/developer.entity';

@Entity('oauth_clients')
export class OAuthClientEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'client_id', type: 'varchar', length: 200, unique: true })
  clientId!: string;

  @Column({ type: 'varchar', length: 200 })
  name!: string;

  /** scrypt hash of the client secret; null for public clients. */
  @Column({ name: 'secret_hash', type: 'text', nullable: true, select: false })
  secretHash!: string | null;

  @Column({ name: 'redirect_uris', type: 'text', array: true, default: () => "'{}'" })
  redirectUris!: string[];

  @Column({ name: 'is_public', type: 'boolean', default: false })
  isPublic!: boolean;

  /** Set for an API developer's own client: client_credentials tokens act as this developer. */
  @Index()
  @Column({ name: 'developer_id', type: 'uuid', nullable: true })
  developerId!: string | null;

  @ManyToOne(() => DeveloperEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'developer_id' })
  developer?: DeveloperEntity;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;
}
