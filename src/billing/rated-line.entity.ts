import { Column, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { numericTransformer } from '../database/numeric.transformer';

/**
 * One priced line of a workspace's month: a quantity of a component (compute vCPU-hours of one
 * usage period, a subscription's share of the month…) times its unit price. Rating is idempotent:
 * (workspace, month, component, source) is unique and re-rating updates the line in place.
 */
@Entity('billing_rated_lines')
@Index(['workspaceId', 'ym', 'component', 'sourceId'], { unique: true })
export class RatedLineEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'workspace_id', type: 'uuid' })
  workspaceId!: string;

  /** The month, `YYYY-MM`. */
  @Column({ type: 'char', length: 7 })
  ym!: string;

  @Column({ type: 'varchar', length: 40 })
  component!: string;

  /** What was rated (a usage period id, a subscription id…). */
  @Column({ name: 'source_id', type: 'varchar', length: 100 })
  sourceId!: string;

  @Column({ type: 'numeric', precision: 18, scale: 6, transformer: numericTransformer })
  quantity!: number;

  @Column({ type: 'varchar', length: 20 })
  unit!: string;

  @Column({ name: 'unit_price', type: 'numeric', precision: 12, scale: 6, transformer: numericTransformer })
  unitPrice!: number;

  /**
   * quantity × unit price, rounded to 6 places. Wide enough for the product of the largest quantity
   * and the largest unit price their own columns hold (under 10^12 × 10^6), so no line the rating
   * can produce overflows it, whatever the configured prices (a line that did not fit would fail its
   * month's rating on every attempt).
   */
  @Column({ type: 'numeric', precision: 24, scale: 6, transformer: numericTransformer })
  amount!: number;

  @UpdateDateColumn({ name: 'rated_at', type: 'timestamptz' })
  ratedAt!: Date;
}
