import { Column, Entity, PrimaryColumn } from 'typeorm';
import { numericTransformer } from '../database/numeric.transformer';

/**
 * A dedicated compute size offered to workspaces (seeded by migration). `memory` is a display string
 * (e.g. "4 GiB"); `hourlyCost` is in US dollars per hour; `connectionLimit` is what the size grants on
 * the data-plane server.
 */
@Entity('compute_types')
export class ComputeTypeEntity {
  @PrimaryColumn({ type: 'varchar', length: 40 })
  id!: string;

  @Column({ name: 'compute_size', type: 'varchar', length: 40 })
  computeSize!: string;

  @Column({ type: 'int' })
  vcpus!: number;

  @Column({ type: 'varchar', length: 20 })
  memory!: string;

  @Column({ name: 'hourly_cost', type: 'numeric', precision: 10, scale: 4, transformer: numericTransformer })
  hourlyCost!: number;

  @Column({ name: 'connection_limit', type: 'int' })
  connectionLimit!: number;

  @Column({ type: 'int', default: 0 })
  position!: number;
}
