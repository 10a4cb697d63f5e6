import { SubscriptionLevel } from './subscription-level';
import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * One level of a workspace's subscription over a time range [validFrom, validTo). The current
 * subscription is the row whose range contains now; a change closes it and opens the next.
 */
@Entity('subscriptions')
@Index(['workspaceId', 'validFrom'])
export class SubscriptionEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'workspace_id', type: 'uuid' })
  workspaceId!: string;

  /** Only the service writes rows, always with one of the levels. */
  @Column({ type: 'varchar', length: 20 })
  level!: SubscriptionLevel;

  @Column({ name: 'valid_from', type: 'timestamptz' })
  validFrom!: Date;

  @Column({ name: 'valid_to', type: 'timestamptz', nullable: true })
  validTo!: Date | null;

  @Column({ name: 'changed_by', type: 'uuid', nullable: true })
  changedBy!: string | null;

  /**
   * True only on the FREE row a workspace is given at its creation (SubscriptionsService
   * holdFreeFromCreation) while no client has written the subscription: any start, change or close
   * clears it. While the current row is implicit, POST starts the subscription a client asks for.
   */
  @Column({ type: 'boolean', default: false })
  implicit!: boolean;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;
}
